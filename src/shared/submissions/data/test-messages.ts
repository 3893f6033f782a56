// A key's test messages (the owner console's "Send a test message"): the count of the last hour
// that bounds them, under a lock of the key's own. Their row is written by ./submission-inserts.ts.
import type { EntityManager } from '@mikro-orm/postgresql';

/**
 * Takes the key's test-message lock until the transaction ends: two presses at once are counted
 * one after the other, so the bound holds.
 */
export async function lockTestMessages(tx: EntityManager, keyId: string): Promise<void> {
  await tx.execute(`select pg_advisory_xact_lock(hashtextextended('test-messages/' || ?, 0))`, [keyId]);
}

/** The key's test messages since `since`, and when the oldest of them came (null: none). */
export async function testMessagesSince(tx: EntityManager, keyId: string, since: Date): Promise<{ count: number; oldest: Date | null }> {
  const [row] = await tx.execute<Array<{ count: number; oldest: Date | null }>>(
    `select count(*)::int as count, min(created_at) as oldest from submissions where key_id = ? and test and created_at > ?`,
    [keyId, since],
  );
  return { count: row?.count ?? 0, oldest: row?.oldest ? new Date(row.oldest) : null };
}
