// The cheapest statement PostgreSQL must answer: the readiness check's test of the database.
import type { EntityManager } from '@mikro-orm/postgresql';

/** Resolves once PostgreSQL has answered `select 1` on a connection of the pool. */
export async function pingDatabase(em: EntityManager): Promise<void> {
  await em.getConnection().execute('select 1');
}
