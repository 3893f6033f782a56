// The delivery lifecycle of a row, for every kind (./delivery-kinds.ts), in one place: claim,
// record the outcome (sent, retrying or failed), find the rows that await a job (the workers), and
// put a row back in the queue (the owner's re-send, the consent release: the API). The statuses come
// from ./delivery-statuses.ts; tables and columns from the kind's descriptor (constants, never input).
// One file though past 250 lines: every change of a stored row's status is here, readable in one go.
import type { EntityManager } from '@mikro-orm/postgresql';
import type pg from 'pg';
import { deliveryKinds, type DeliveryKindName } from './delivery-kinds.ts';
import type { CustomFields, EmailStatus, SpamFilterLevel, SpamMark, SpamReason, SpamVerdict } from './db/entities.ts';
import { CLAIMABLE, FAILED, HELD, IN_FLIGHT, QUEUED, REPORTED, RESENDABLE, sqlList } from './delivery-statuses.ts';
import { OWNER_MIN_LEARNS } from './spam-filter.ts';

const tableOf = (kind: DeliveryKindName) => deliveryKinds[kind].table;

/**
 * A claim counts one attempt. Claiming a failed row (its job retried on the queue dashboard) is a
 * re-send, like requeueFailed's: a fresh delivery, its attempts from 1 and its horizon from now.
 */
const COUNT_ATTEMPT = `email_attempts = case when email_status = '${FAILED}' then 1 else email_attempts + 1 end,
            requeued_at = case when email_status = '${FAILED}' then now() else requeued_at end`;

/**
 * Compare-and-set: only one worker moves the row to `sending`, so a job that runs twice sends once.
 * A `sending` row whose claim is older than the lease belongs to a dead worker and may be taken.
 * Returns the attempt number, or undefined when the row is not claimable.
 */
export async function claimRow(em: EntityManager, kind: DeliveryKindName, id: string, claimLeaseMs: number): Promise<number | undefined> {
  const claimed = await em.execute<Array<{ email_attempts: number }>>(
    `update ${tableOf(kind)}
        set email_status = '${IN_FLIGHT}', claimed_at = now(), ${COUNT_ATTEMPT}
      where id = ?
        and (email_status in (${sqlList(CLAIMABLE)})
             or (email_status = '${IN_FLIGHT}' and claimed_at < now() - make_interval(secs => ?)))
      returning email_attempts`,
    [id, claimLeaseMs / 1000],
  );
  return claimed[0]?.email_attempts;
}

/** What the submission email needs of its row, loaded by the statement that claims it. */
export type ClaimedSubmission = {
  id: string;
  email: string;
  message: string;
  subject: string;
  customFields: CustomFields;
  createdAt: Date;
  /** The key owner's address; null only if the key row were gone (the foreign key forbids it). */
  keyEmail: string | null;
  attachmentCount: number;
  /** Set while the key's address is suppressed after hard bounces: the email is not attempted. */
  suppressedUntil: Date | null;
  /** The key's mailbox reported one of these emails as spam: not attempted until its owner signs in. */
  complained: boolean;
  /** The key's label when its owner asked for it before the email's subject; null otherwise. */
  subjectLabel: string | null;
  /** The key owner's mailbox: whose own spam statistics apply. */
  keyMailbox: string | null;
  spamFilter: SpamFilterLevel;
  /** Whether the owner taught enough marks for their own spam statistics to count. */
  ownerStatistics: boolean;
  /** The verdict of an earlier attempt (checked once per submission), and the owner's mark. */
  spamVerdict: SpamVerdict | null;
  spamMark: SpamMark | null;
};

/** A claimed submission: its attempt number and what its email needs. */
export type SubmissionClaim = { attempt: number; submission: ClaimedSubmission };

/** What runs a parameterised statement: a pg pool or client. */
export type Queryable = Pick<pg.Pool, 'query'>;

/** The claim of ../workers/submission-claims.ts, by name: each connection parses and plans it once. */
const CLAIM_SUBMISSIONS = {
  name: 'claim-submissions',
  text: `with claimed as (
       update submissions
          set email_status = '${IN_FLIGHT}', claimed_at = now(), ${COUNT_ATTEMPT}
        where id = any($1::uuid[])
          and (email_status in (${sqlList(CLAIMABLE)})
               or (email_status = '${IN_FLIGHT}' and claimed_at < now() - make_interval(secs => $2)))
        returning id, key_id, email, message, subject, custom_fields, created_at, email_attempts, spam_verdict, spam_mark)
     select c.id, c.email, c.message, c.subject, c.custom_fields, c.email_attempts, k.email as key_email,
            k.mailbox as key_mailbox, k.spam_filter, c.spam_verdict, c.spam_mark,
            case when k.subject_prefix then k.label end as subject_label,
            -- Milliseconds since the epoch: unambiguous, whatever text form the driver gives a timestamptz.
            (extract(epoch from c.created_at) * 1000)::float8 as created_ms,
            (select count(*)::int from attachments a where a.submission_id = c.id) as attachment_count,
            case when b.suppressed_until > now() then (extract(epoch from b.suppressed_until) * 1000)::float8 end as suppressed_ms,
            mc.complained_at is not null as complained,
            coalesce((select m.spam >= ${OWNER_MIN_LEARNS} and m.ham >= ${OWNER_MIN_LEARNS} from owner_spam_marks m
              where m.mailbox = k.mailbox), false) as owner_statistics
       from claimed c left join verification_keys k on k.id = c.key_id
            left join address_bounces b on b.address = k.email
            left join mailbox_complaints mc on mc.mailbox = k.mailbox`,
};

/**
 * The claims of submissions (each the same compare-and-set as claimRow, so only one worker claims
 * a row) and what their emails need, in one statement: the rows, their keys' addresses and how
 * many files each has. Hydrating the row and its key through the ORM was a large share of a
 * worker's CPU (docs/benchmarks.md, scenario 3); the jobs that start together share the statement
 * (../workers/submission-claims.ts). One result per id, in order, undefined for a row that is not
 * claimable; an id given twice is claimed for its first occurrence only, so it is sent once.
 * A prepared statement with the ids as one array parameter: the same text whatever the batch's
 * size, so PostgreSQL parses and plans it once per connection instead of once per batch.
 */
export async function claimSubmissions(db: Queryable, ids: string[], claimLeaseMs: number): Promise<Array<SubmissionClaim | undefined>> {
  const { rows } = await db.query<{
    id: string;
    email: string;
    message: string;
    subject: string;
    custom_fields: CustomFields;
    created_ms: number;
    email_attempts: number;
    key_email: string | null;
    attachment_count: number;
    suppressed_ms: number | null;
    complained: boolean;
    key_mailbox: string | null;
    subject_label: string | null;
    spam_filter: SpamFilterLevel | null;
    spam_verdict: SpamVerdict | null;
    spam_mark: SpamMark | null;
    owner_statistics: boolean;
  }>({ ...CLAIM_SUBMISSIONS, values: [ids, claimLeaseMs / 1000] });
  const byId = new Map(rows.map((row) => [row.id, row]));
  return ids.map((id) => {
    // PostgreSQL answers a uuid in lower case.
    const row = byId.get(id.toLowerCase());
    if (!row) return undefined;
    byId.delete(row.id);
    return {
      attempt: row.email_attempts,
      submission: {
        id: row.id,
        email: row.email,
        message: row.message,
        subject: row.subject,
        customFields: row.custom_fields,
        createdAt: new Date(Number(row.created_ms)),
        keyEmail: row.key_email,
        attachmentCount: row.attachment_count,
        suppressedUntil: row.suppressed_ms === null ? null : new Date(Number(row.suppressed_ms)),
        complained: row.complained,
        keyMailbox: row.key_mailbox,
        subjectLabel: row.subject_label,
        spamFilter: row.spam_filter ?? 'off',
        ownerStatistics: row.owner_statistics,
        spamVerdict: row.spam_verdict,
        spamMark: row.spam_mark,
      },
    };
  });
}

export type FailurePolicy = {
  /** The failure is final whatever the row's age (a permanent refusal, the job's last attempt). */
  final: boolean;
  /** A row older than this (counted from its last re-send, if any) fails instead of retrying. */
  retryHorizonMs: number;
  /** Unset: no limit. */
  maxAttempts: number | undefined;
  reason: string;
  /** Webhooks: the receiver's HTTP status, null when it never answered. */
  responseCode?: number | null;
  /** Submissions: the retry timer its job gets if the row stays `retrying` (next_attempt_at), and who tried (the history). */
  retry?: { delayMs: number; worker: string };
};

/**
 * Releases the claim after a failed attempt: `retrying`, or `failed` when the policy says it is over.
 * A submission's attempt joins its history in the same statement, and a `retrying` one says when its
 * job's timer ends.
 */
export async function recordFailure(em: EntityManager, kind: DeliveryKindName, id: string, policy: FailurePolicy): Promise<'failed' | 'retrying'> {
  const over = '(? or coalesce(requeued_at, created_at) < now() - make_interval(secs => ?) or email_attempts >= ?)';
  const overValues = [policy.final, policy.retryHorizonMs / 1000, policy.maxAttempts ?? 2 ** 31 - 1];
  if (kind === 'submission' && policy.retry) {
    const [row] = await em.execute<Array<{ email_status: 'failed' | 'retrying' }>>(
      `with recorded as (
         update submissions
            set email_status = case when ${over} then 'failed' else 'retrying' end,
                next_attempt_at = case when ${over} then null else now() + make_interval(secs => ?) end,
                last_error = ?, claimed_at = null
          where id = ?
          returning id, email_status, email_attempts, last_error),
       logged as (
         insert into delivery_attempts (submission_id, attempt, outcome, response, worker)
         select id, email_attempts, email_status, last_error, ? from recorded)
       select email_status from recorded`,
      [...overValues, ...overValues, policy.retry.delayMs / 1000, policy.reason, id, policy.retry.worker],
    );
    return row?.email_status ?? 'failed';
  }
  const [row] = await em.execute<Array<{ email_status: 'failed' | 'retrying' }>>(
    `update ${tableOf(kind)}
        set email_status = case when ${over} then 'failed' else 'retrying' end,
            last_error = ?, claimed_at = null${kind === 'webhook' ? ', last_response_code = ?' : ''}
      where id = ?
      returning email_status`,
    [...overValues, policy.reason, ...(kind === 'webhook' ? [policy.responseCode ?? null] : []), id],
  );
  // A row deleted meanwhile has nothing left to retry.
  return row?.email_status ?? 'failed';
}

/** A claimed email that is not attempted: its mailbox is suppressed (`reason` says why and until when). */
export async function recordSuppressed(em: EntityManager, kind: DeliveryKindName, id: string, reason: string): Promise<void> {
  await em.execute(`update ${tableOf(kind)} set email_status = 'suppressed', claimed_at = null, last_error = ? where id = ? and email_status = '${IN_FLIGHT}'`, [
    reason,
    id,
  ]);
}

/** Whether `mailbox` reported an email of this service as spam since its owner last signed in. */
export async function hasComplained(em: EntityManager, mailbox: string): Promise<boolean> {
  const rows = await em.execute<Array<{ complained: boolean }>>('select true as complained from mailbox_complaints where mailbox = ?', [mailbox]);
  return rows[0]?.complained === true;
}

/** The spam filter's verdict on a claimed submission; `spam` also ends its delivery: kept, not emailed. */
export async function recordSpamVerdict(em: EntityManager, id: string, verdict: SpamVerdict, scan: { score: number; reasons: SpamReason[] } | undefined): Promise<void> {
  await em.execute(
    `update submissions
        set spam_verdict = ?, spam_score = ?, spam_reasons = ?::jsonb, spam_checked_at = now(),
            email_status = case when ? = 'spam' then 'spam' else email_status end,
            claimed_at = case when ? = 'spam' then null else claimed_at end
      where id = ? and email_status = '${IN_FLIGHT}'`,
    [verdict, scan?.score ?? null, scan ? JSON.stringify(scan.reasons) : null, verdict, verdict, id],
  );
}

export type SentRow = { id: string; created_at: Date; sent_at: Date };

/** A submission's spam verdict, written with its `sent` (../workers/spam-check.ts). */
export type SpamResult = { verdict: SpamVerdict; score: number | null; reasons: SpamReason[] | null };

/** `response`: the SMTP server's reply to the message (250 …), kept in a submission's history. */
export type SentItem = { id: string; messageId: string; response?: string | undefined; spam?: SpamResult | undefined };

/**
 * Marks a batch of rows of one kind `sent`, with their Message-IDs, in one statement (see
 * ../workers/sent-recorder.ts). Prepared by name (one per kind): parsed and planned once per connection.
 * A bounce may come back before this write (the relay reports within a second, this commit can
 * wait longer): a row already `bounced` or `complained` keeps that status. `worker` names the
 * process in the submissions' delivery history.
 */
export async function recordSent(db: Queryable, kind: DeliveryKindName, sent: SentItem[], worker: string): Promise<SentRow[]> {
  const status = `email_status = case when t.email_status in (${sqlList(REPORTED)}) then t.email_status else 'sent' end`;
  if (kind !== 'submission') {
    const result = await db.query<SentRow>({
      name: `record-sent-${kind}`,
      text: `update ${tableOf(kind)} as t
          set ${status}, sent_at = now(), message_id = v.message_id, last_error = null
         from unnest($1::uuid[], $2::text[]) as v(id, message_id)
        where t.id = v.id
        returning t.id, t.created_at, t.sent_at`,
      values: [sent.map((item) => item.id), sent.map((item) => item.messageId)],
    });
    return result.rows;
  }
  // A submission's spam verdict (ham, or unchecked when the filter failed) rides on this write:
  // no statement of its own per email (npm run bench, scenario 9). So does its attempt's row in the
  // history: one more insert in the same statement, not a round trip.
  const result = await db.query<SentRow>({
    name: 'record-sent-submission',
    text: `with recorded as (
       update submissions as t
          set ${status}, sent_at = now(), message_id = v.message_id, last_error = null,
              spam_verdict = coalesce(v.verdict, t.spam_verdict),
              spam_score = case when v.verdict is null then t.spam_score else v.score end,
              spam_reasons = case when v.verdict is null then t.spam_reasons else v.reasons end,
              spam_checked_at = case when v.verdict is null then t.spam_checked_at else now() end
         from unnest($1::uuid[], $2::text[], $3::text[], $4::real[], $5::jsonb[], $6::text[]) as v(id, message_id, verdict, score, reasons, response)
        where t.id = v.id
        returning t.id, t.created_at, t.sent_at, t.email_attempts, v.response),
     logged as (
       insert into delivery_attempts (submission_id, attempt, attempted_at, outcome, response, worker)
       select id, email_attempts, sent_at, 'sent', response, $7 from recorded)
     select id, created_at, sent_at from recorded`,
    values: [
      sent.map((item) => item.id),
      sent.map((item) => item.messageId),
      sent.map((item) => item.spam?.verdict ?? null),
      sent.map((item) => item.spam?.score ?? null),
      sent.map((item) => (item.spam?.reasons ? JSON.stringify(item.spam.reasons) : null)),
      sent.map((item) => item.response?.slice(0, 2000) ?? null),
      worker,
    ],
  });
  return result.rows;
}

/** Gives a claimed row back untouched (not an attempt): `queued` again, its attempt uncounted. */
export async function releaseClaim(em: EntityManager, kind: DeliveryKindName, id: string): Promise<void> {
  await em.execute(
    `update ${tableOf(kind)} set email_status = '${QUEUED}', claimed_at = null, email_attempts = greatest(email_attempts - 1, 0)
      where id = ? and email_status = '${IN_FLIGHT}'`,
    [id],
  );
}

/** A webhook delivery that will not be made (its submission is held as spam): `skipped`, with why. */
export async function recordSkipped(em: EntityManager, id: string, reason: string): Promise<void> {
  await em.execute(`update webhook_deliveries set email_status = 'skipped', claimed_at = null, last_error = ? where id = ? and email_status = '${IN_FLIGHT}'`, [reason, id]);
}

/** A webhook answered 2xx: `sent`, with the answer's status. */
export async function recordDelivered(em: EntityManager, id: string, responseCode: number): Promise<SentRow | undefined> {
  const [row] = await em.execute<SentRow[]>(
    `update webhook_deliveries
        set email_status = 'sent', sent_at = now(), last_error = null, last_response_code = ?, claimed_at = null
      where id = ?
      returning id, created_at, sent_at`,
    [responseCode, id],
  );
  return row;
}

/** created_at as text: a JS Date would drop the microseconds and a page cursor would repeat rows. */
export type AwaitingRow = { id: string; created_at: string };

/**
 * The index a kind's status lookups use: (email_status, created_at) on most tables; on submissions,
 * whose claims must not touch an indexed column (HOT updates), (created_at, id) over the rows
 * that are not `settled` (src/shared/db/migrations/Migration20261123063800_submissions_hot_claims.ts).
 */
const OPEN_ROWS: Record<DeliveryKindName, string> = { submission: 'and not settled', 'key-email': '', webhook: '' };

/**
 * One page, in (created_at, id) order after `after`, of the rows in `status` that should have a
 * job by now: awaiting rows older than `staleAfterMs`, in-flight rows whose claim is older than
 * `claimLeaseMs`. One status per query, so each page is a range of the (status, created_at) index
 * (on submissions, of the open rows' (created_at, id) index).
 */
export async function findAwaitingJob(
  em: EntityManager,
  kind: DeliveryKindName,
  status: EmailStatus,
  ages: { staleAfterMs: number; claimLeaseMs: number },
  limit: number,
  after?: AwaitingRow,
): Promise<AwaitingRow[]> {
  const condition =
    status === IN_FLIGHT
      ? { sql: 'claimed_at < now() - make_interval(secs => ?)', age: ages.claimLeaseMs }
      : { sql: 'created_at < now() - make_interval(secs => ?)', age: ages.staleAfterMs };
  // Ordered by the column, not by the text of the same name selected: that order would take every
  // remaining row and sort it, for each page (a run over a backlog grew with its square).
  return em.execute<AwaitingRow[]>(
    `select id, created_at::text as created_at from ${tableOf(kind)}
      where email_status = ? ${OPEN_ROWS[kind]} and ${condition.sql}
        ${after ? 'and (created_at, id) > (cast(? as timestamptz), cast(? as uuid))' : ''}
      order by ${tableOf(kind)}.created_at, id limit ${limit}`,
    after ? [status, condition.age / 1000, after.created_at, after.id] : [status, condition.age / 1000],
  );
}

/** The key that owns a row, per kind: an owner may re-send only rows of their keys. */
const OWNED_BY: Record<DeliveryKindName, string> = {
  submission: 'key_id = ?',
  'key-email': 'key_id = ?',
  webhook: 'endpoint_id in (select id from webhook_endpoints where key_id = ?)',
};

/** What a re-send forgets: the report of the earlier email (emails only; webhooks have none). */
const FORGET_REPORT: Record<DeliveryKindName, string> = {
  submission: ', bounce_type = null, bounce_status = null, bounce_diagnostic = null, bounce_mta = null, bounced_at = null',
  'key-email': ', bounce_type = null, bounce_status = null, bounce_diagnostic = null, bounce_mta = null, bounced_at = null',
  webhook: '',
};

/**
 * A failed, bounced or suppressed row (of key `keyId`, when given) back to `queued`, for a re-send:
 * the reconciler finds it should the enqueue that follows be lost. A fresh delivery: its attempts
 * count from 0 and its retry horizon from now, so a row failed for good after the horizon is not
 * failed again by its first temporary refusal. False when there is no such row.
 */
export async function requeueFailed(em: EntityManager, kind: DeliveryKindName, id: string, keyId?: string): Promise<boolean> {
  const rows = await em.execute<Array<{ id: string }>>(
    `update ${tableOf(kind)} set email_status = '${QUEUED}', claimed_at = null, email_attempts = 0, requeued_at = now()${FORGET_REPORT[kind]}
      where id = ? and email_status in (${sqlList(RESENDABLE)}) ${keyId === undefined ? '' : `and ${OWNED_BY[kind]}`}
      returning id`,
    keyId === undefined ? [id] : [id, keyId],
  );
  return rows.length > 0;
}

/**
 * The consent release: the `held` submissions of the keys sending to `mailbox` become `queued`, their
 * retry horizon counted from now (they may have waited days); returns their ids to enqueue.
 */
export async function releaseHeld(em: EntityManager, mailbox: string): Promise<string[]> {
  const released = await em.execute<Array<{ id: string }>>(
    `update submissions set email_status = '${QUEUED}', requeued_at = now()
      where not settled and email_status = '${HELD}' and key_id in (select id from verification_keys where mailbox = ?)
      returning id`,
    [mailbox],
  );
  return released.map((row) => row.id);
}

/**
 * When `retrying` submissions are tried next, after a flush brought their jobs' timers forward
 * (./retry-flush.ts). Ids of other kinds match no submission and change nothing.
 */
export async function setNextAttempts(em: EntityManager, rows: Array<{ id: string; at: Date }>): Promise<void> {
  if (rows.length === 0) return;
  await em.execute(
    `update submissions as s set next_attempt_at = v.at
       from jsonb_to_recordset(?::jsonb) as v(id uuid, at timestamptz)
      where s.id = v.id and s.email_status = 'retrying'`,
    [JSON.stringify(rows)],
  );
}
