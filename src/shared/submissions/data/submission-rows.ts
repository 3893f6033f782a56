// The submissions table's rows: reading them, the pages of the console and the operator, the
// housekeeping's reads and deletions, the counts of held messages, and the write lock a submission's
// answer waits on. Saving a new one is ./submission-inserts.ts.
import type { EntityManager } from '@mikro-orm/postgresql';
import { SubmissionSchema, type CustomFields, type Submission } from '../entities.ts';
import type { EmailStatus } from '../../deliveries/delivery-columns.ts';
import { SEARCH_DOCUMENT } from '../../infra/db/search.ts';
import { SETTLED } from '../../deliveries/delivery-statuses.ts';

/** What a page of submissions is narrowed to: a key (by its lookup index), a status, a time range. */
export type SubmissionFilter = { keyHash?: string; status?: EmailStatus; from?: Date; before?: Date };

/**
 * The ids of a page, newest first, and one more when there is a next page: at most `limit + 1`,
 * after the (created_at, id) of `after`. `tsquery`: only the rows whose text matches it.
 */
export async function findPageIds(
  em: EntityManager,
  filter: SubmissionFilter,
  tsquery: string | undefined,
  limit: number,
  after?: { createdAt: Date; id: string },
): Promise<string[]> {
  const where: string[] = [];
  const params: unknown[] = [];
  const add = (condition: string, ...values: unknown[]) => {
    where.push(condition);
    params.push(...values);
  };
  if (filter.keyHash) add('key_id = (select id from verification_keys where key_hash = ?)', filter.keyHash);
  // `settled` as well, so the planner can use the partial index on created_at of the status's
  // side (open or settled): no index names email_status (claims are HOT updates, see the
  // migration submissions_hot_claims).
  if (filter.status) add('email_status = ? and settled = ?', filter.status, SETTLED.includes(filter.status));
  if (filter.from) add('created_at >= ?', filter.from);
  if (filter.before) add('created_at < ?', filter.before);
  if (after) add('(created_at < ? or (created_at = ? and id < ?))', after.createdAt, after.createdAt, after.id);
  const filtered = where.length ? where.join(' and ') : 'true';
  const order = 'order by created_at desc, id desc';
  if (!tsquery) {
    return (await em.execute<Array<{ id: string }>>(`select id from submissions where ${filtered} ${order} limit ?`, [...params, limit + 1])).map(
      (row) => row.id,
    );
  }
  // The key's matches from the GIN index whose first column is the key (materialized, so that
  // PostgreSQL reads them there rather than walking the key's rows by date), then the newest of them.
  return (
    await em.execute<Array<{ id: string }>>(
      `with found as materialized (select id, created_at from submissions where ${filtered} and ${SEARCH_DOCUMENT} @@ to_tsquery('simple', ?))
       select id from found ${order} limit ?`,
      [...params, tsquery, limit + 1],
    )
  ).map((row) => row.id);
}

/** The submissions with these ids (in no particular order; a deleted one is missing). */
export const findSubmissionsByIds = (em: EntityManager, ids: string[]) => em.find(SubmissionSchema, { id: { $in: ids } });

/** A list's view of a row's texts: the message and each field's value cut to a bound, and whether any was cut. */
export type TextPreview = { message: string; customFields: CustomFields; truncated: boolean };

/**
 * The submissions with these ids without their message and fields (not loaded: the same
 * EntityManager then holds these rows partial, so read whole ones with another), and beside them
 * those texts cut: the message to `messageChars`, each field's value to FIELD_PREVIEW_CHARS.
 * Neither is unpacked whole: the message's head is read alone, and the cut fields are stored by a
 * trigger (migration list_previews); rows older than it are cut here. So a page of large messages
 * costs PostgreSQL, the API and the answer no more than a page of short ones.
 */
export async function findSubmissionPreviews(
  em: EntityManager,
  ids: string[],
  messageChars: number,
): Promise<{ rows: Submission[]; previews: Map<string, TextPreview> }> {
  const rows = await em.find(SubmissionSchema, { id: { $in: ids } }, { exclude: ['message', 'customFields'] });
  const cutOnRead = `(select coalesce(jsonb_agg(jsonb_build_array(f ->> 0, left(f ->> 1, ${FIELD_PREVIEW_CHARS})) order by n), '[]')
                        from jsonb_array_elements(custom_fields) with ordinality as e(f, n))`;
  const texts = await em.execute<Array<{ id: string; message: string; custom_fields: CustomFields; truncated: boolean }>>(
    `select id, left(message, ?) as message, coalesce(fields_preview, ${cutOnRead}) as custom_fields,
            length(left(message, ?)) > ? or coalesce(fields_truncated, exists (select 1 from jsonb_array_elements(custom_fields) as e(f) where length(f ->> 1) > ${FIELD_PREVIEW_CHARS})) as truncated
       from submissions where id in (?)`,
    [messageChars, messageChars + 1, messageChars, ids],
  );
  const previews = new Map(texts.map((text) => [text.id, { message: text.message, customFields: text.custom_fields, truncated: text.truncated }]));
  // Typed as whole rows for the code that renders them, which takes the texts from `previews`.
  return { rows: rows as unknown as Submission[], previews };
}

/** How many characters of each field's value a list shows: the bound the list_previews migration's trigger stores. */
export const FIELD_PREVIEW_CHARS = 500;

/** The submission with its key, or null. */
export const findSubmissionWithKey = (em: EntityManager, id: string) => em.findOne(SubmissionSchema, { id }, { populate: ['key'] });

/** Loads the key of each submission. */
export async function loadKeys(em: EntityManager, submissions: Submission[]): Promise<void> {
  await em.populate(submissions, ['key']);
}

/** How many of the address's messages are `held`, waiting for its mailbox to confirm. */
export async function countHeldOfAddress(em: EntityManager, email: string): Promise<number> {
  const [row] = await em.execute<Array<{ n: number }>>(
    `select count(*)::int as n from submissions s join verification_keys k on k.id = s.key_id
      where k.email = ? and not s.settled and s.email_status = 'held'`,
    [email],
  );
  return row?.n ?? 0;
}

/**
 * What the housekeeping deletes once it is old enough: settled submissions; held ones (their mailbox
 * never confirmed); skipped ones of keys whose mailbox has not confirmed.
 */
export type ExpiringSubmissions = 'settled' | 'held' | 'unconfirmed skipped';

const unconfirmed = `key_id in (select k.id from verification_keys k left join recipients r on r.mailbox = k.mailbox
                                   where r.confirmed_at is null)`;
// `settled` (derived from email_status: SETTLED) picks the partial index on created_at that serves
// each of them.
const EXPIRING: Record<ExpiringSubmissions, string> = {
  settled: 'settled',
  held: `not settled and email_status = 'held'`,
  'unconfirmed skipped': `settled and email_status = 'skipped' and ${unconfirmed}`,
};

/** The ids of the oldest `limit` submissions of that kind created more than `days` days ago. */
export async function findExpiredIds(em: EntityManager, which: ExpiringSubmissions, days: number, limit: number): Promise<string[]> {
  const rows = await em.execute<Array<{ id: string }>>(
    `select id from submissions where created_at < now() - make_interval(days => ?) and ${EXPIRING[which]} order by created_at limit ${Math.floor(limit)}`,
    [days],
  );
  return rows.map((row) => row.id);
}

/** Deletes the submissions (their attachment rows cascade) and gives their files' bytes back to their keys' quotas, in one transaction. */
export async function deleteSubmissionRows(em: EntityManager, ids: string[]): Promise<void> {
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

/** The email status of the submission with this id; undefined when there is no such row. */
export async function readEmailStatus(em: EntityManager, id: string): Promise<EmailStatus | undefined> {
  const [row] = await em.execute<Array<{ email_status: EmailStatus }>>('select email_status from submissions where id = ?', [id]);
  return row?.email_status;
}

/** The submission with this id (a UUID), or null. */
export async function findSubmissionById(em: EntityManager, id: string): Promise<Submission | null> {
  return em.findOne(SubmissionSchema, id);
}

/** The submission with this id when its key's address is `email`; null otherwise (not the owner's, or no such row). */
export async function findSubmissionOfOwner(em: EntityManager, email: string, id: string): Promise<Submission | null> {
  return em.findOne(SubmissionSchema, { id, key: { email } });
}

/** Loads the submission's key row into `submission.key` (its fields beyond the id). */
export async function loadSubmissionKey(em: EntityManager, submission: Submission): Promise<void> {
  await em.populate(submission, ['key']);
}

/** Reads the submission's row again into `submission`, after statements that changed it. */
export async function reloadSubmission(em: EntityManager, submission: Submission): Promise<void> {
  await em.refresh(submission);
}

/**
 * Starts a submission's write in the transaction `tx`: PostgreSQL ends its statements after
 * `timeoutMs` (and the transaction, should it idle that long), and the transaction holds the
 * submission's write lock until it ends, for settledSubmission. One round trip: set_config(…, true)
 * is SET LOCAL.
 */
export async function beginSubmissionWrite(tx: EntityManager, id: string, timeoutMs: number): Promise<void> {
  await tx.execute(
    `select set_config('statement_timeout', ?, true), set_config('idle_in_transaction_session_timeout', ?, true), pg_advisory_xact_lock(hashtext(?))`,
    [`${timeoutMs}ms`, `${timeoutMs}ms`, writeLock(id)],
  );
}

/**
 * Whether the submission's row is stored, asked once no write of it can still be under way: the
 * submission's write lock is taken first, so a transaction begun by beginSubmissionWrite has
 * committed or rolled back (or died with its server) by then. Two statements, as a statement's
 * snapshot is taken before it waits for the lock. Waits at most `lockTimeoutMs` for the lock.
 */
export async function settledSubmission(em: EntityManager, id: string, lockTimeoutMs: number): Promise<boolean> {
  return em.transactional(async (tx) => {
    await tx.execute(`select set_config('lock_timeout', ?, true), pg_advisory_xact_lock(hashtext(?))`, [`${lockTimeoutMs}ms`, writeLock(id)]);
    const rows = await tx.execute<Array<{ id: string }>>('select id from submissions where id = ?', [id]);
    return rows.length > 0;
  });
}

/** The name of a submission's write lock (an advisory lock, by its hash). */
export const writeLock = (id: string) => `submission-write:${id}`;
