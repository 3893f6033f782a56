// Transaction boundaries for code outside the data-access modules: the statements run inside are
// still those modules' functions, given the transaction's EntityManager.
import type { EntityManager } from '@mikro-orm/postgresql';

/** Runs `work` in one transaction, given the transaction's EntityManager: committed when it resolves, rolled back when it throws. */
export async function inTransaction<T>(em: EntityManager, work: (tx: EntityManager) => Promise<T>): Promise<T> {
  return em.transactional(work);
}
