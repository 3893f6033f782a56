// MikroORM setup shared by the API, the workers and the tools.
import { fileURLToPath } from 'node:url';
import { MikroORM, type Options } from '@mikro-orm/postgresql';
import { Migrator } from '@mikro-orm/migrations';
import pg from 'pg';
import { closeUnsettledConnections, LONG_OPERATION_TIMEOUTS, PG_KEEPALIVE, startupOptions, type DatabasePooler, type PgTimeouts } from './pg-pool.ts';

export type { MikroORM };

export const MIGRATIONS_PATH = fileURLToPath(new URL('./migrations', import.meta.url));

/**
 * How long a pool waits, in ms: for a connection (opened, or freed by another query) and for each
 * statement's answer. Unset: as long as TCP does. The API sets both (src/api/server.ts); the workers
 * and the tools wait, since what they would do instead is try again. `timeouts`: what PostgreSQL
 * bounds on each connection (./pg-pool.ts); unset, those of a long operation (a migration, a tool).
 * `pooler`: DATABASE_POOLER, when the URL names a pooler (no startup options then).
 */
export type PgPoolOptions = { connectMs?: number; queryMs?: number; timeouts?: PgTimeouts; pooler?: DatabasePooler };

/** The entities the ORM maps: every table of the service (src/shared/schema.ts), named by the caller so that this module imports no feature. */
export type Entities = NonNullable<Options['entities']>;

export function ormOptions(databaseUrl: string, entities: Entities, poolMax = 20, waits: PgPoolOptions = {}): Options {
  return {
    clientUrl: databaseUrl,
    entities,
    extensions: [Migrator],
    pool: { min: 0, max: poolMax, idleTimeoutMillis: 30_000 },
    // Options of the pg pool itself.
    driverOptions: {
      ...PG_KEEPALIVE,
      ...startupOptions(waits.timeouts ?? LONG_OPERATION_TIMEOUTS, waits.pooler),
      ...(waits.connectMs ? { connectionTimeoutMillis: waits.connectMs } : {}),
      ...(waits.queryMs ? { query_timeout: waits.queryMs } : {}),
      // Kysely hands a connection back as sound after a statement given up on: see closeUnsettledConnections.
      onPoolCreated: closeUnsettledConnections,
    },
    // The schema is owned by the migrations, never created implicitly.
    ensureDatabase: false,
    // No snapshot file: new migrations are diffed against a freshly migrated database (npm run migration:create).
    // Each migration in a transaction of its own, not all in one: a migration that must not lock a
    // large table builds its indexes CONCURRENTLY, outside any transaction.
    migrations: { path: MIGRATIONS_PATH, pathTs: MIGRATIONS_PATH, emit: 'ts', snapshot: false, silent: true, allOrNothing: false },
    // The triggers and functions are written by hand in migrations and not mirrored in the entities:
    // without this, every new migration would drop them.
    schemaGenerator: { ignoreTriggers: true, ignoreRoutines: true },
  };
}

export function createOrm(databaseUrl: string, entities: Entities, poolMax?: number, waits?: PgPoolOptions): Promise<MikroORM> {
  // init builds an instance of the class it is called on (`new this`); only its declared type names the core class.
  // eslint-disable-next-line @typescript-eslint/no-unsafe-class-instance-assignment
  return MikroORM.init(ormOptions(databaseUrl, entities, poolMax, waits));
}

/**
 * Key of the PostgreSQL advisory lock held while migrating: any fixed number no other code of this
 * database uses ("cfs-migr" in ASCII).
 */
const MIGRATION_LOCK = 0x6366_732d_6d69_6772n;

/**
 * Applies pending migrations; returns their names. Several processes may run it at once (each new
 * pod's init step on Kubernetes): the lock lets one through, the others wait for it and then find
 * nothing pending. The lock is held by a connection of its own for the whole run, since the
 * migrator also queries outside its transaction (it creates its table first); a process that dies
 * ends that connection, and the lock with it.
 */
/**
 * Waits for the migration lock by trying it, not by blocking in pg_advisory_lock: a blocked statement
 * keeps a snapshot open for as long as it waits, and CREATE INDEX CONCURRENTLY in the running
 * migration waits for every older snapshot to end, so the two would wait for each other for ever.
 */
async function takeMigrationLock(lock: pg.Client): Promise<void> {
  for (;;) {
    const result = await lock.query<{ locked: boolean }>('select pg_try_advisory_lock($1) as locked', [MIGRATION_LOCK.toString()]);
    if (result.rows[0]?.locked) return;
    await new Promise((resolve) => setTimeout(resolve, MIGRATION_LOCK_RETRY_MS));
  }
}
const MIGRATION_LOCK_RETRY_MS = 250;

export async function migrate(orm: MikroORM): Promise<string[]> {
  const lock = new pg.Client({ connectionString: orm.config.get('clientUrl') });
  // A broken connection fails the query in flight, or the end below: the event must not crash.
  lock.on('error', () => undefined);
  await lock.connect();
  try {
    await takeMigrationLock(lock);
    const applied = await orm.migrator.up();
    return applied.map((migration) => migration.name);
  } finally {
    await lock.end().catch(() => undefined);
  }
}
