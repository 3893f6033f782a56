// Submissions for operators and housekeeping (API, workers, tools): one record shape, newest-first
// pages, and deletion with their files.
import type { EntityManager } from '@mikro-orm/postgresql';
import { AttachmentSchema, SubmissionSchema, type EmailStatus, type Submission } from './db/entities.ts';
import type { Storage } from './storage.ts';
import { SETTLED } from './delivery-statuses.ts';

/** The subject of a submission that came without one. */
export const defaultSubject = (email: string) => `New contact form submission from ${email}`;

/** What came back from past the relay for the row's email, or null: the same shape wherever a status shows. */
export function bounceRecord(row: Pick<Submission, 'bounceType' | 'bounceStatus' | 'bounceDiagnostic' | 'bounceMta' | 'bouncedAt'>) {
  if (!row.bounceType || !row.bouncedAt) return null;
  return {
    type: row.bounceType,
    status: row.bounceStatus ?? null,
    diagnostic: row.bounceDiagnostic ?? null,
    reporting_mta: row.bounceMta ?? null,
    at: row.bouncedAt.toISOString(),
  };
}

/** The spam filter's verdict and the owner's mark; null when the submission was never checked nor marked. */
export function spamRecord(row: Pick<Submission, 'spamVerdict' | 'spamScore' | 'spamReasons' | 'spamCheckedAt' | 'spamMark' | 'spamMarkedAt'>) {
  if (!row.spamVerdict && !row.spamMark) return null;
  return {
    verdict: row.spamVerdict ?? null,
    score: row.spamScore ?? null,
    reasons: row.spamReasons ?? [],
    checked_at: row.spamCheckedAt?.toISOString() ?? null,
    mark: row.spamMark ?? null,
    marked_at: row.spamMarkedAt?.toISOString() ?? null,
  };
}

/** What every record of a submission shows, operator's or owner's; each adds its files in its own way. */
export function submissionFields(submission: Submission) {
  return {
    submission_id: submission.id,
    email_status: submission.emailStatus,
    email_attempts: submission.emailAttempts,
    last_error: submission.lastError ?? null,
    bounce: bounceRecord(submission),
    spam: spamRecord(submission),
    sent_at: submission.sentAt?.toISOString() ?? null,
    created_at: submission.createdAt.toISOString(),
    email: submission.email,
    subject: submission.subject,
    message: submission.message,
    custom_fields: submission.customFields.map(([name, value]) => ({ name, value })),
  };
}

/** A submission's files, in the order they came. */
export const submissionFiles = (em: EntityManager, submission: Submission) =>
  em.find(AttachmentSchema, { submission: submission.id }, { orderBy: { createdAt: 'asc' } });

export async function submissionRecord(em: EntityManager, submission: Submission) {
  const files = await submissionFiles(em, submission);
  return {
    ...submissionFields(submission),
    attachments: files.map((file) => ({ filename: file.filename, size: file.size, content_type: file.contentType })),
  };
}

/** `keyHash`: the lookup index of the key (see src/shared/secrets.ts). */
export type SubmissionPageQuery = { keyHash?: string; status?: EmailStatus; limit: number };

/** The cursor is the (created_at, id) of the last row shown, so pages stay stable while rows arrive. */
export function encodeCursor(submission: Pick<Submission, 'createdAt' | 'id'>): string {
  return Buffer.from(`${submission.createdAt.toISOString()}|${submission.id}`).toString('base64url');
}

export function decodeCursor(cursor: string): { createdAt: Date; id: string } | undefined {
  const [createdAt, id] = Buffer.from(cursor, 'base64url').toString('utf8').split('|');
  if (!createdAt || !id || Number.isNaN(Date.parse(createdAt)) || !/^[0-9a-f-]{36}$/.test(id)) return undefined;
  return { createdAt: new Date(createdAt), id };
}

export async function listSubmissions(em: EntityManager, query: SubmissionPageQuery, after?: { createdAt: Date; id: string }) {
  const rows = await em.find(
    SubmissionSchema,
    {
      ...(query.keyHash ? { key: { keyHash: query.keyHash } } : {}),
      // `settled` as well, so the planner can use the partial index on created_at of the status's
      // side (open or settled): no index names email_status (claims are HOT updates, see the
      // migration submissions_hot_claims).
      ...(query.status ? { emailStatus: query.status, settled: SETTLED.includes(query.status) } : {}),
      ...(after
        ? { $or: [{ createdAt: { $lt: after.createdAt } }, { createdAt: after.createdAt, id: { $lt: after.id } }] }
        : {}),
    },
    { orderBy: [{ createdAt: 'desc' }, { id: 'desc' }], limit: query.limit + 1 },
  );
  const page = rows.slice(0, query.limit);
  return { page, nextCursor: rows.length > query.limit ? encodeCursor(page[page.length - 1]!) : null };
}

/** Deletes submissions with their files, giving their bytes back to their keys' quotas. */
export async function deleteSubmissions(em: EntityManager, storage: Storage, ids: string[]): Promise<void> {
  const files = await em.execute<Array<{ storage_key: string }>>('select storage_key from attachments where submission_id in (?)', [ids]);
  // Files first: a crash between the two steps leaves rows pointing at nothing, never orphan files.
  if (files.length) await storage.remove(files.map((file) => file.storage_key));
  await em.transactional(async (tx) => {
    await tx.execute(
      `update verification_keys k set stored_bytes = greatest(0, k.stored_bytes - s.bytes)
         from (select sub.key_id, sum(a.size) as bytes from attachments a join submissions sub on sub.id = a.submission_id
                where sub.id in (?) group by sub.key_id) s
        where k.id = s.key_id`,
      [ids],
    );
    await tx.execute('delete from submissions where id in (?)', [ids]); // attachments cascade
  });
}
