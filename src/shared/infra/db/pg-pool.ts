// A small pg pool of a worker's own, beside the ORM's, for the statements it runs on every email
// (claims, `sent`): prepared by name on its connections (../../submissions/data/delivery-rows.ts). And the TCP
// keepalive every PostgreSQL connection of the service uses.
import pg from 'pg';

/**
 * TCP keepalive on every PostgreSQL connection. Between hosts, a partition makes a connection hang
 * instead of fail. The kernel probes one that has been silent for 10 s, then every second, ten
 * times (Node's interval and count): a connection whose server is gone, idle in a pool or waiting
 * for an answer, fails within about 20 s and the pool opens another. (A request still unacknowledged
 * when the link went down is TCP's retransmission instead: up to about 15 minutes, see
 * docs/operations.md; the API bounds its own waits below that.)
 */
export const PG_KEEPALIVE = { keepAlive: true, keepAliveInitialDelayMillis: 10_000 } as const;

export function createPgPool(databaseUrl: string, max: number): pg.Pool {
  const pool = new pg.Pool({ connectionString: databaseUrl, max, ...PG_KEEPALIVE });
  // A connection that breaks (idle, or while the pool closes it) is replaced on the next query, and
  // the query in flight fails on its own: the error event must not crash the process.
  pool.on('error', () => undefined);
  pool.on('connect', (client) => client.on('error', () => undefined));
  return pool;
}
