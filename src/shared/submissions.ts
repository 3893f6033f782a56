// Submissions for operators and housekeeping (API, workers, tools): one record shape, newest-first
// pages, and deletion with their files.
import type { EntityManager } from '@mikro-orm/postgresql';
import { AttachmentSchema, SubmissionSchema, type AttemptOutcome, type EmailStatus, type Submission } from './db/entities.ts';
import type { Storage } from './storage.ts';
import { SETTLED } from './delivery-statuses.ts';
import { messageIdFor } from './delivery-kinds.ts';
import type { KeyVault } from './secrets.ts';
import { SEARCH_DOCUMENT } from './db/search.ts';

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

/** One attempt to send the email: when, what came of it, the server's reply (or the error), which worker. */
export type AttemptRecord = { attempt: number; at: string; outcome: AttemptOutcome; response: string | null; worker: string };
/** A submission's delivery history as records show it: the newest attempts, and how many are kept in all. */
export type DeliveryHistory = { attempts: AttemptRecord[]; total: number };

/** Attempts a record lists, newest first; a message retried for days has a hundred or more. */
export const ATTEMPTS_SHOWN = 20;
const NO_HISTORY: DeliveryHistory = { attempts: [], total: 0 };

/** The delivery histories of some submissions, in one query (a page of records needs them all). */
export async function deliveryHistories(em: EntityManager, ids: string[]): Promise<Map<string, DeliveryHistory>> {
  const histories = new Map<string, DeliveryHistory>();
  if (ids.length === 0) return histories;
  const rows = await em.execute<Array<AttemptRecord & { submission_id: string; total: number }>>(
    `select s.id as submission_id, c.total, a.attempt, to_char(a.attempted_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as at,
            a.outcome, a.response, a.worker
       from submissions s
       cross join lateral (select count(*)::int as total from delivery_attempts d where d.submission_id = s.id) c
       join lateral (select * from delivery_attempts d where d.submission_id = s.id order by d.id desc limit ${ATTEMPTS_SHOWN}) a on true
      where s.id in (?)
      order by s.id, a.id desc`,
    [ids],
  );
  for (const { submission_id: id, total, ...attempt } of rows) {
    const history = histories.get(id) ?? { attempts: [], total };
    history.attempts.push(attempt);
    histories.set(id, history);
  }
  return histories;
}

/** What every record of a submission shows, operator's or owner's; each adds its files in its own way. */
export function submissionFields(submission: Submission, history: DeliveryHistory = NO_HISTORY) {
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

/** What the operator's records need besides the rows: the keys' values, and MAIL_FROM for the Message-IDs. */
export type OperatorView = { vault: KeyVault; mailFrom: string };

/**
 * The operator's records of some submissions: the submission, its key (id and value, as the admin
 * key routes show them), the address its email goes to, and its Message-ID: the one the relay
 * accepted, or, before that, the one its email carries (none for a submission not to be emailed).
 */
export async function submissionRecords(em: EntityManager, view: OperatorView, submissions: Submission[]) {
  await em.populate(submissions, ['key']);
  const histories = await deliveryHistories(em, submissions.map((submission) => submission.id));
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
      attachments: files.map((file) => ({ filename: file.filename, size: file.size, content_type: file.contentType })),
    });
  }
  return records;
}

export async function submissionRecord(em: EntityManager, view: OperatorView, submission: Submission) {
  const [record] = await submissionRecords(em, view, [submission]);
  return record!;
}

/**
 * `keyHash`: the lookup index of the key (see src/shared/secrets.ts). `search`: words that must all
 * begin a word of the message (full text, see ./db/search.ts); `from` and `before`: received at or
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
 * How many of the newest rows a search reads in date order before it asks the full-text index.
 * PostgreSQL cannot estimate how many rows a prefix search matches: it may walk a key's 100,000
 * rows newest first, building each row's text for the match to find a rare word (docs/benchmarks.md, scenario 11).
 * A common word is found fastest in that walk, a rare one through the index: so the walk stops here.
 */
const SEARCH_WINDOW = 1_000;

export async function listSubmissions(em: EntityManager, query: SubmissionPageQuery, after?: { createdAt: Date; id: string }) {
  const where: string[] = [];
  const params: unknown[] = [];
  const add = (condition: string, ...values: unknown[]) => {
    where.push(condition);
    params.push(...values);
  };
  if (query.keyHash) add('key_id = (select id from verification_keys where key_hash = ?)', query.keyHash);
  // `settled` as well, so the planner can use the partial index on created_at of the status's
  // side (open or settled): no index names email_status (claims are HOT updates, see the
  // migration submissions_hot_claims).
  if (query.status) add('email_status = ? and settled = ?', query.status, SETTLED.includes(query.status));
  if (query.from) add('created_at >= ?', query.from);
  if (query.before) add('created_at < ?', query.before);
  if (after) add('(created_at < ? or (created_at = ? and id < ?))', after.createdAt, after.createdAt, after.id);
  const filtered = where.length ? where.join(' and ') : 'true';
  const order = 'order by created_at desc, id desc';
  const tsquery = query.search ? searchQuery(query.search) : undefined;
  let ids: string[];
  if (!tsquery) {
    ids = (await em.execute<Array<{ id: string }>>(`select id from submissions where ${filtered} ${order} limit ?`, [...params, query.limit + 1])).map((row) => row.id);
  } else {
    // The newest rows first (the expression as the index has it, word for word)...
    const [recent] = await em.execute<Array<{ scanned: number; ids: string | null }>>(
      `with recent as materialized (select id, created_at, email, subject, message, custom_fields from submissions where ${filtered} ${order} limit ?),
            hits as (select id, created_at from recent where ${SEARCH_DOCUMENT} @@ to_tsquery('simple', ?) ${order} limit ?)
       select (select count(*)::int from recent) as scanned, (select string_agg(id::text, ',' ${order}) from hits) as ids`,
      [...params, SEARCH_WINDOW, tsquery, query.limit + 1],
    );
    const hits = recent?.ids ? recent.ids.split(',') : [];
    // A full page, or every row the filters leave was read: that is the answer.
    const complete = hits.length > query.limit || (recent?.scanned ?? 0) < SEARCH_WINDOW;
    // ...else, for a rarer word, the full-text index: all the matches, of which the newest.
    ids = complete
      ? hits
      : (
          await em.execute<Array<{ id: string }>>(
            `with found as materialized (select id, created_at from submissions where ${filtered} and ${SEARCH_DOCUMENT} @@ to_tsquery('simple', ?))
             select id from found ${order} limit ?`,
            [...params, tsquery, query.limit + 1],
          )
        ).map((row) => row.id);
  }
  const byId = new Map((ids.length ? await em.find(SubmissionSchema, { id: { $in: ids } }) : []).map((row) => [row.id, row]));
  // A row deleted between the two reads is left out.
  const rows = ids.map((id) => byId.get(id)).filter((row): row is Submission => row !== undefined);
  const page = rows.slice(0, query.limit);
  return { page, nextCursor: ids.length > query.limit && page.length ? encodeCursor(page[page.length - 1]!) : null };
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
