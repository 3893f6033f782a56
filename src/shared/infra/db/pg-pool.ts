// A small pg pool of a worker's own, beside the ORM's, for the statements it runs on every email
// (claims, `sent`): prepared by name on its connections (../../submissions/data/delivery-rows.ts). And the TCP
// keepalive every PostgreSQL connection of the service uses, and what changes behind a pooler.
import pg from 'pg';

/**
 * DATABASE_POOLER: `transaction` when DATABASE_URL names a pooler in transaction mode (PgBouncer).
 * Each transaction, and each statement outside one, may then run on another server connection.
 */
export type DatabasePooler = 'none' | 'transaction';

/**
 * TCP keepalive on every PostgreSQL connection. Between hosts, a partition makes a connection hang
 * instead of fail. The kernel probes one that has been silent for 10 s, then every second, ten
 * times (Node's interval and count): a connection whose server is gone, idle in a pool or waiting
 * for an answer, fails within about 20 s and the pool opens another. (A request still unacknowledged
 * when the link went down is TCP's retransmission instead: up to about 15 minutes, see
 * docs/operations.md; the API bounds its own waits below that.)
 */
export const PG_KEEPALIVE = { keepAlive: true, keepAliveInitialDelayMillis: 10_000 } as const;

/**
 * What PostgreSQL itself bounds on a connection, in ms (0: no bound): a statement's run
 * (`statement_timeout`: past it the server cancels the statement, so a client that gave up leaves
 * nothing running) and a transaction left idle (`idle_in_transaction_session_timeout`: the server
 * ends the connection, so a stuck process holds no locks). Sent as startup options, so every
 * connection of a pool has them from its first statement.
 */
export type PgTimeouts = { statementMs: number; idleInTransactionMs: number };

/**
 * Migrations, backups and restores: a statement takes as long as the data needs (an index built
 * over the whole table, a COPY of it), and a transaction may wait 10 minutes between two of them
 * (a backup writes each table out inside its snapshot).
 */
export const LONG_OPERATION_TIMEOUTS: PgTimeouts = { statementMs: 0, idleInTransactionMs: 10 * 60_000 };

type TimeoutSettings = { PG_STATEMENT_TIMEOUT_MS: number; PG_IDLE_IN_TRANSACTION_TIMEOUT_MS: number; PG_WORKER_STATEMENT_TIMEOUT_MS?: number };

/** The configured bounds: `request` for the API, the bounce receiver and the admin CLI, `worker` for a worker. */
export const configuredTimeouts = (config: TimeoutSettings, kind: 'request' | 'worker'): PgTimeouts => ({
  statementMs: kind === 'worker' ? (config.PG_WORKER_STATEMENT_TIMEOUT_MS ?? config.PG_STATEMENT_TIMEOUT_MS) : config.PG_STATEMENT_TIMEOUT_MS,
  idleInTransactionMs: config.PG_IDLE_IN_TRANSACTION_TIMEOUT_MS,
});

/** The bounds as the options of a pg client or pool. */
export const pgTimeoutOptions = (timeouts: PgTimeouts) => ({
  options: `-c statement_timeout=${Math.floor(timeouts.statementMs)} -c idle_in_transaction_session_timeout=${Math.floor(timeouts.idleInTransactionMs)}`,
});

/**
/**
 * The bounds as a connection's startup options, sent to PostgreSQL itself only: PgBouncer refuses
 * a connection that carries them ("unsupported startup parameter: options"), and behind it the
 * pooler's own settings set them (docs/deploying.md#pgbouncer).
 */
export const startupOptions = (timeouts: PgTimeouts, pooler: DatabasePooler = 'none') => (pooler === 'none' ? pgTimeoutOptions(timeouts) : {});

/**
 * `pooler`: what DATABASE_URL names. `connectMs`, `queryMs`: how long the pool waits for a
 * connection and for each statement's answer (the API's bounds); unset, as long as TCP does.
 */
export type PgPoolSettings = { pooler?: DatabasePooler | undefined; connectMs?: number | undefined; queryMs?: number | undefined };

export function createPgPool(databaseUrl: string, max: number, timeouts: PgTimeouts = LONG_OPERATION_TIMEOUTS, settings: PgPoolSettings = {}): pg.Pool {
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max,
    ...PG_KEEPALIVE,
    ...startupOptions(timeouts, settings.pooler),
    ...(settings.connectMs ? { connectionTimeoutMillis: settings.connectMs } : {}),
    ...(settings.queryMs ? { query_timeout: settings.queryMs } : {}),
  });
  // A connection that breaks (idle, or while the pool closes it) is replaced on the next query, and
  // the query in flight fails on its own: the error event must not crash the process.
  pool.on('error', () => undefined);
  pool.on('connect', (client) => client.on('error', () => undefined));
  closeUnsettledConnections(pool);
  return pool;
}

/**
 * Makes the pool close a connection handed back with a statement still unanswered or a transaction
 * still open, instead of keeping it for the next query. `query_timeout` gives up on a statement
 * without ending it, and the ORM hands such a connection back as if it were sound: a BEGIN given up
 * on while PostgreSQL was stalled runs once it resumes, and the next statement on that connection
 * (another request's INSERT) then joins a transaction nobody commits: it succeeds, and is lost.
 * Ended here, in the pool's `release` event, the connection is removed by the pool right after it.
 */
export function closeUnsettledConnections(pool: pg.Pool): void {
  pool.on('release', (error: Error | undefined, client: pg.PoolClient & { readyForQuery?: boolean }) => {
    if (error || (client.readyForQuery === true && client.getTransactionStatus() === 'I')) return;
    void client.end().catch(() => undefined);
  });
}

/** What runs a statement that may be prepared by name: a pg pool, or one that drops the names. */
export type StatementRunner = { query: <R extends pg.QueryResultRow>(statement: pg.QueryConfig) => Promise<pg.QueryResult<R>> };

/**
 * The pool's statements as they can run: by name directly (pg prepares a named statement once per
 * connection, then sends only the name), unnamed behind a transaction pooler, whose next server
 * connection never saw that name ("prepared statement does not exist"). Unnamed, PostgreSQL
 * parses and plans each one again.
 */
export function statementRunner(pool: pg.Pool, pooler: DatabasePooler): StatementRunner {
  if (pooler === 'none') return pool;
  return { query: (statement) => pool.query({ text: statement.text, ...(statement.values ? { values: statement.values } : {}) }) };
}
