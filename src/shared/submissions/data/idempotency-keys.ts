// The idempotency_keys table: which submission a client's Idempotency-Key made, and the
// fingerprint of the request that made it.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { EmailStatus } from '../../deliveries/delivery-columns.ts';

export type IdempotencyRecord = { submissionId: string; fingerprint: string };

/** The submission this key's Idempotency-Key made, with its request's fingerprint; undefined when none did (or it was deleted). */
export async function findIdempotencyKey(em: EntityManager, keyId: string, idempotencyKey: string): Promise<IdempotencyRecord | undefined> {
  const [row] = await em.execute<Array<{ submission_id: string; fingerprint: string }>>(
    'select submission_id, fingerprint from idempotency_keys where key_id = ? and idempotency_key = ?',
    [keyId, idempotencyKey],
  );
  return row && { submissionId: row.submission_id, fingerprint: row.fingerprint };
}

/**
 * Takes the Idempotency-Key for this submission, in the transaction that stores it. A concurrent
 * request with the same key waits here until the first one's transaction ends; then, or when an
 * earlier one stored it, the first submission's record: undefined means taken by this one.
 */
export async function takeIdempotencyKey(
  tx: EntityManager,
  row: { keyId: string; idempotencyKey: string; fingerprint: string; submissionId: string },
): Promise<IdempotencyRecord | undefined> {
  const [taken] = await tx.execute<Array<{ submission_id: string }>>(
    `insert into idempotency_keys (key_id, idempotency_key, fingerprint, submission_id) values (?, ?, ?, ?)
     on conflict (key_id, idempotency_key) do nothing returning submission_id`,
    [row.keyId, row.idempotencyKey, row.fingerprint, row.submissionId],
  );
  if (taken) return undefined;
  return findIdempotencyKey(tx, row.keyId, row.idempotencyKey);
}

/** What the answer to a repeated request says of the first one's submission: its email's status now and its files. */
export async function findIdempotentAnswer(em: EntityManager, submissionId: string): Promise<{ emailStatus: EmailStatus; attachments: number } | undefined> {
  const [row] = await em.execute<Array<{ email_status: EmailStatus; attachments: number }>>(
    'select s.email_status, (select count(*)::int from attachments a where a.submission_id = s.id) as attachments from submissions s where s.id = ?',
    [submissionId],
  );
  return row && { emailStatus: row.email_status, attachments: row.attachments };
}

/** Idempotency keys older than `hours`; how many were deleted. */
export async function deleteOldIdempotencyKeys(em: EntityManager, hours: number): Promise<number> {
  const result = await em.execute<{ affectedRows: number }>(
    'delete from idempotency_keys where created_at < now() - make_interval(hours => ?)',
    [hours],
    'run',
  );
  return result.affectedRows;
}
