// Submissions for operators and housekeeping (API, workers, tools): one record shape, newest-first
// pages, and deletion with their files.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { EmailStatus } from '../deliveries/delivery-columns.ts';
import type { Attachment, Submission } from './entities.ts';
import type { FileScanOutcome } from '../words/file-scan-outcomes.ts';
import type { Storage } from '../infra/storage.ts';
import { messageIdFor } from '../deliveries/delivery-kinds.ts';
import type { KeyVault } from '../infra/secrets.ts';
import { findAttachments, findAttachmentsOf, storageKeysOf } from './data/attachments.ts';
import { latestAttempts, type AttemptRecord } from './data/delivery-attempts.ts';
import { deleteSubmissionRows, findPageIds, findSubmissionPreviews, findSubmissionsByIds, loadKeys, type TextPreview } from './data/submission-rows.ts';

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

export type { AttemptRecord };
/** A submission's delivery history as records show it: the newest attempts, and how many are kept in all. */
export type DeliveryHistory = { attempts: AttemptRecord[]; total: number };

/** Attempts a record lists, newest first; a message retried for days has a hundred or more. */
export const ATTEMPTS_SHOWN = 20;
const NO_HISTORY: DeliveryHistory = { attempts: [], total: 0 };

/** The delivery histories of some submissions, in one query (a page of records needs them all). */
export async function deliveryHistories(em: EntityManager, ids: string[]): Promise<Map<string, DeliveryHistory>> {
  const histories = new Map<string, DeliveryHistory>();
  if (ids.length === 0) return histories;
  const rows = await latestAttempts(em, ids, ATTEMPTS_SHOWN);
  for (const { submission_id: id, total, ...attempt } of rows) {
    const history = histories.get(id) ?? { attempts: [], total };
    history.attempts.push(attempt);
    histories.set(id, history);
  }
  return histories;
}

/** Stands in the owner's view for a host name or address of the operator's network. */
const RELAY = '(the mail relay)';

/**
 * A delivery error as the owner sees it. An SMTP reply (it starts with its code) is the relay's
 * answer and is shown as it is; another error (DNS, connection) names hosts of the operator's
 * network, which are replaced.
 */
export function ownerReply(text: string | null): string | null {
  if (text === null || /^[2-5]\d\d[ -]/.test(text)) return text;
  return (
    text
      // As Node words them: `getaddrinfo ENOTFOUND relay`, `connect ECONNREFUSED 10.0.0.5:587`, `queryA EAI_AGAIN relay`.
      .replace(/\b(getaddrinfo|query\w*|connect|lookup) (E[A-Z0-9_]+) \S+/g, `$1 $2 ${RELAY}`)
      .replace(/\[[0-9a-f:.]+\](?::\d+)?/gi, RELAY)
      .replace(/\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b/g, RELAY)
      .replace(/\b(?=[\w-]*[a-z])[\w-]+(?:\.[\w-]+)+(?::\d+)?/gi, RELAY)
  );
}

/**
 * The delivery fields as the form's owner sees them: what happened to each attempt, without the
 * worker that made it (the operator's host and process id) or the operator's host names.
 */
export function ownerDeliveryFields(fields: ReturnType<typeof submissionFields>) {
  return {
    ...fields,
    last_error: ownerReply(fields.last_error),
    delivery_attempts: fields.delivery_attempts.map(({ attempt, at, outcome, response }) => ({ attempt, at, outcome, response: ownerReply(response) })),
  };
}

/** What every record of a submission shows, operator's or owner's; each adds its files in its own way. */
export function submissionFields(
  submission: Submission,
  history: DeliveryHistory = NO_HISTORY,
  texts: Pick<Submission, 'message' | 'customFields'> = submission,
) {
  return {
    submission_id: submission.id,
    email_status: submission.emailStatus,
    email_attempts: submission.emailAttempts,
    last_error: submission.lastError ?? null,
    last_attempt_at: history.attempts[0]?.at ?? null,
    // Kept on the row after it moves on; it means something only while the row waits to retry.
    next_attempt_at: submission.emailStatus === 'retrying' ? (submission.nextAttemptAt?.toISOString() ?? null) : null,
    delivery_attempts: history.attempts,
    delivery_attempts_total: history.total,
    bounce: bounceRecord(submission),
    spam: spamRecord(submission),
    autoresponse: submission.autoresponse ?? null,
    sent_at: submission.sentAt?.toISOString() ?? null,
    created_at: submission.createdAt.toISOString(),
    email: submission.email,
    subject: submission.subject,
    message: texts.message,
    custom_fields: texts.customFields.map(([name, value]) => ({ name, value })),
  };
}

/** A submission's files, in the order they came. */
export const submissionFiles = (em: EntityManager, submission: Submission) => findAttachments(em, submission.id);

/** The files of a page of submissions, by submission id, in one query. */
export const filesOfSubmissions = (em: EntityManager, submissions: Submission[]) =>
  findAttachmentsOf(
    em,
    submissions.map((submission) => submission.id),
  );

/** What the operator's records need besides the rows: the keys' values, and MAIL_FROM for the Message-IDs. */
export type OperatorView = { vault: KeyVault; mailFrom: string };

/** A file's scan as the APIs, the console and the webhooks show it; null before the scan or with scanning off. */
export function scanRecord(file: Pick<Attachment, 'scanOutcome' | 'scanDetail'>): { outcome: FileScanOutcome; detail: string | null } | null {
  return file.scanOutcome ? { outcome: file.scanOutcome, detail: file.scanDetail ?? null } : null;
}

/**
 * The operator's records of some submissions: the submission, its key (id and value, as the admin
 * key routes show them), the address its email goes to, and its Message-ID: the one the relay
 * accepted, or, before that, the one its email carries (none for a submission not to be emailed).
 */
export async function submissionRecords(em: EntityManager, view: OperatorView, submissions: Submission[]) {
  await loadKeys(em, submissions);
  const histories = await deliveryHistories(
    em,
    submissions.map((submission) => submission.id),
  );
  const records = [];
  for (const submission of submissions) {
    const files = await submissionFiles(em, submission);
    const key = submission.key;
    records.push({
      ...submissionFields(submission, histories.get(submission.id)),
      key_id: key.id,
      key: view.vault.decrypt(key.keyEncrypted),
      recipient: key.email,
      message_id: submission.messageId ?? (submission.emailStatus === 'skipped' ? null : messageIdFor('submission', submission.id, view.mailFrom)),
      attachments: files.map((file) => ({
        filename: file.filename,
        size: file.size,
        content_type: file.contentType,
        scan: scanRecord(file),
      })),
    });
  }
  return records;
}

export async function submissionRecord(em: EntityManager, view: OperatorView, submission: Submission) {
  const [record] = await submissionRecords(em, view, [submission]);
  return record!;
}

/**
 * `keyHash`: the lookup index of the key (see src/shared/infra/secrets.ts). `search`: words that must all
 * begin a word of the message (full text, see ../infra/db/search.ts); `from` and `before`: received at or
 * after, and before, these times.
 */
export type SubmissionPageQuery = { keyHash?: string; status?: EmailStatus; search?: string; from?: Date; before?: Date; limit: number };

/** The cursor is the (created_at, id) of the last row shown, so pages stay stable while rows arrive. */
export function encodeCursor(submission: Pick<Submission, 'createdAt' | 'id'>): string {
  return Buffer.from(`${submission.createdAt.toISOString()}|${submission.id}`).toString('base64url');
}

export function decodeCursor(cursor: string): { createdAt: Date; id: string } | undefined {
  const [createdAt, id] = Buffer.from(cursor, 'base64url').toString('utf8').split('|');
  if (!createdAt || !id || Number.isNaN(Date.parse(createdAt)) || !/^[0-9a-f-]{36}$/.test(id)) return undefined;
  return { createdAt: new Date(createdAt), id };
}

/** At most this many words of a search count; a search is a few words, not a paragraph. */
const SEARCH_WORDS = 8;

/**
 * A search as a tsquery: its letters-and-digits words, each a prefix ("ana" finds Anastasia), all
 * required. Only such words reach to_tsquery, so no input can be a syntax error. Undefined: no word.
 */
export function searchQuery(search: string): string | undefined {
  const words = (search.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).slice(0, SEARCH_WORDS).map((word) => word.slice(0, 64));
  return words.length ? words.map((word) => `'${word}':*`).join(' & ') : undefined;
}

/**
 * A page of submissions. With `preview`, the rows come without their message and fields, and
 * `previews` holds those texts cut to its bounds (see findSubmissionPreviews).
 */
export async function listSubmissions(
  em: EntityManager,
  query: SubmissionPageQuery,
  after?: { createdAt: Date; id: string },
  preview?: { messageChars: number },
): Promise<{ page: Submission[]; nextCursor: string | null; previews?: Map<string, TextPreview> }> {
  const tsquery = query.search ? searchQuery(query.search) : undefined;
  const ids = await findPageIds(em, query, tsquery, query.limit, after);
  const found = !ids.length
    ? { rows: [] }
    : preview
      ? await findSubmissionPreviews(em, ids, preview.messageChars)
      : { rows: await findSubmissionsByIds(em, ids) };
  const byId = new Map(found.rows.map((row) => [row.id, row]));
  // A row deleted between the two reads is left out.
  const rows = ids.map((id) => byId.get(id)).filter((row): row is Submission => row !== undefined);
  const page = rows.slice(0, query.limit);
  return {
    page,
    nextCursor: ids.length > query.limit && page.length ? encodeCursor(page[page.length - 1]!) : null,
    ...('previews' in found ? { previews: found.previews } : {}),
  };
}

/** Deletes submissions with their files, giving their bytes back to their keys' quotas. */
export async function deleteSubmissions(em: EntityManager, storage: Storage, ids: string[]): Promise<void> {
  const files = await storageKeysOf(em, ids);
  // Files first: a crash between the two steps leaves rows pointing at nothing, never orphan files.
  if (files.length) await storage.remove(files);
  await deleteSubmissionRows(em, ids);
}

// What the API, the workers, the CLI and the other features call of this feature's data modules
// (they import no data module of another feature: test/unit/module-boundaries.test.ts).
export { findAttachments, findFileOfOwner } from './data/attachments.ts';
export { customFieldNames } from './data/submission-export.ts';
export {
  insertSubmissionBatch,
  insertSubmissionRows,
  insertSubmissionWithFiles,
  insertSubmissionWithFilesCommitted,
  insertTestMessage,
  type NewWebhookDelivery,
  type SubmissionRow,
  submissionRow,
} from './data/submission-inserts.ts';
export {
  beginSubmissionWrite,
  countHeldOfAddress,
  type ExpiringSubmissions,
  findExpiredIds,
  findSubmissionById,
  findSubmissionOfOwner,
  findSubmissionWithKey,
  loadSubmissionKey,
  readEmailStatus,
  reloadSubmission,
  settledSubmission,
  type TextPreview,
} from './data/submission-rows.ts';
/** How long an Idempotency-Key answers the same: past the 24 hours a client may retry within, with a day to spare. */
export const IDEMPOTENCY_KEPT_HOURS = 48;
export { deleteOldIdempotencyKeys, findIdempotencyKey, findIdempotentAnswer, takeIdempotencyKey } from './data/idempotency-keys.ts';
export { lockTestMessages, testMessagesSince } from './data/test-messages.ts';
