// A small pg pool of a worker's own, beside the ORM's, for the statements it runs on every email
// (claims, `sent`): prepared by name on its connections (../delivery-rows.ts).
import pg from 'pg';

export function createPgPool(databaseUrl: string, max: number): pg.Pool {
  const pool = new pg.Pool({ connectionString: databaseUrl, max });
  // A connection that breaks (idle, or while the pool closes it) is replaced on the next query, and
  // the query in flight fails on its own: the error event must not crash the process.
  pool.on('error', () => undefined);
  pool.on('connect', (client) => client.on('error', () => undefined));
  return pool;
}
