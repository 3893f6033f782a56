// Transactions for the rules that need several statements to hold together (a limit counted and
// the row it allows inserted, say): the rule decides what goes inside, the data-access modules run
// each statement on the transaction's EntityManager or client.
import type { EntityManager } from '@mikro-orm/postgresql';
import type pg from 'pg';

/** Runs `work` in one transaction of the ORM: committed when it resolves, rolled back when it throws. */
export function inTransaction<T>(em: EntityManager, work: (tx: EntityManager) => Promise<T>): Promise<T> {
  return em.transactional(work);
}

/**
 * Runs `work` in one transaction on a connection of `pool`, released after. A failed rollback
 * (the connection broke) is passed over: the error that caused it is the one worth reporting.
 */
export async function inPgTransaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    return await inClientTransaction(client, work);
  } finally {
    client.release();
  }
}

/**
 * Runs `work` in one transaction on a connection the caller holds (a tool's own pg.Client):
 * committed when it resolves, rolled back when it throws, the rollback's own failure passed over.
 */
export async function inClientTransaction<C extends pg.ClientBase, T>(client: C, work: (client: C) => Promise<T>): Promise<T> {
  await client.query('begin');
  try {
    const result = await work(client);
    await client.query('commit');
    return result;
  } catch (error) {
    await client.query('rollback').catch(() => undefined);
    throw error;
  }
}
