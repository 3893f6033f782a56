// Every write of a delivery status, for every kind (../delivery-kinds.ts), in one place (a new
// submission's first status excepted: ./submission-inserts.ts, checked against the same table): the claim, the outcome a worker records (sent, retrying, failed, suppressed,
// spam, skipped), a report that came back (bounced, complained), and a row put back in the queue
// (a re-send, the consent release, the owner's "not spam", a webhook given back untouched). Each
// statement's status guard and the status it writes are built from the table of
// ../delivery-transitions.ts, so the table and the SQL cannot disagree; their other columns are
// each statement's own. Tables and columns come from the kind's descriptor (constants, never input).
// One file though past 250 lines: every status change is here, readable in one go.
import type { EntityManager } from '@mikro-orm/postgresql';
import type pg from 'pg';
import type { StatementRunner } from '../../infra/db/pg-pool.ts';
import { deliveryKinds, type DeliveryKindName } from '../delivery-kinds.ts';
import { EMAIL_STATUSES, type EmailStatus } from '../delivery-columns.ts';
import type { BounceType } from '../../words/bounce-columns.ts';
import type { CustomFields } from '../../submissions/entities.ts';
import type { SpamFilterLevel, SpamMark, SpamReason, SpamVerdict } from '../../words/spam-kinds.ts';
import type { AutoresponseOutcome } from '../../words/autoresponse-kinds.ts';
import { FAILED, HELD, QUEUED, sqlList } from '../delivery-statuses.ts';
import { transitionsOf, type DeliveryEvent, type KindFor, type TransitionCondition } from '../delivery-transitions.ts';

const tableOf = (kind: DeliveryKindName) => deliveryKinds[kind].table;

/**
 * The SQL pieces built from the table, each built once: the statements that use them run for every
 * email, and the table does not change while the process runs.
 */
const built = new Map<string, string | undefined>();
function once(id: string, build: () => string): string;
function once(id: string, build: () => string | undefined): string | undefined;
function once(id: string, build: () => string | undefined): string | undefined {
  if (!built.has(id)) built.set(id, build());
  return built.get(id);
}

const inList = (statuses: readonly EmailStatus[]) => (statuses.length === 1 ? `= '${statuses[0]}'` : `in (${sqlList(statuses)})`);

function rowsOf(kind: DeliveryKindName, event: DeliveryEvent) {
  const rows = transitionsOf(kind, event);
  if (rows.length === 0) throw new Error(`${event} does not apply to a ${kind} row`);
  return rows;
}

/**
 * The statement's own SQL for the table's conditions on a row: `claimExpired`, its test that the
 * claim is past its lease; `ownClaim`, its test that the claim is still the writer's.
 */
type ConditionSql = { claimExpired?: string; ownClaim?: string };
const SQL_OF: Record<TransitionCondition, keyof ConditionSql> = { 'claim-expired': 'claimExpired', 'own-claim': 'ownClaim' };
type GuardOptions = { column?: string } & ConditionSql;

/**
 * The statuses `event` moves a row of `kind` from, with the table's conditions, as a condition on
 * `column`: undefined when it moves it from any status unconditionally (the statement is not guarded).
 */
function statusGuard(kind: DeliveryKindName, event: DeliveryEvent, options: GuardOptions = {}): string | undefined {
  return once(`guard|${kind}|${event}|${options.column ?? ''}|${options.claimExpired ?? ''}|${options.ownClaim ?? ''}`, () =>
    buildStatusGuard(kind, event, options),
  );
}

function buildStatusGuard(kind: DeliveryKindName, event: DeliveryEvent, options: GuardOptions): string | undefined {
  const column = options.column ?? 'email_status';
  const rows = rowsOf(kind, event);
  /** `statuses` as a condition on the column, undefined for all of them; the shorter list: `not in` the few statuses an event that takes nearly any row refuses. */
  const among = (statuses: readonly EmailStatus[]) => {
    const refused = EMAIL_STATUSES.filter((status) => !statuses.includes(status));
    if (refused.length === 0) return undefined;
    return refused.length < statuses.length ? `${column} not in (${sqlList(refused)})` : `${column} ${inList(statuses)}`;
  };
  const parts: string[] = [];
  const plain = rows.filter((row) => row.onlyIf === undefined).map((row) => row.from);
  if (plain.length > 0) {
    const condition = among(plain);
    // Every status, unconditionally: nothing to guard.
    if (condition === undefined) return undefined;
    parts.push(condition);
  }
  for (const onlyIf of new Set(rows.flatMap((row) => (row.onlyIf === undefined ? [] : [row.onlyIf])))) {
    const sql = options[SQL_OF[onlyIf]];
    if (sql === undefined) throw new Error(`${event} of a ${kind} row needs the statement's test of ${onlyIf}`);
    const statuses = among(rows.filter((row) => row.onlyIf === onlyIf).map((row) => row.from));
    parts.push(statuses === undefined ? sql : `(${statuses} and ${sql})`);
  }
  return parts.length === 1 ? parts[0] : `(${parts.join('\n             or ')})`;
}

/** The guard as a condition that is always there: `true` for an event that applies to any status. */
const statusCondition = (kind: DeliveryKindName, event: DeliveryEvent, options: { column?: string } = {}) => statusGuard(kind, event, options) ?? 'true';

/** The guard as more of a where clause: ` and <guard>`, or nothing. */
const andStatus = (kind: DeliveryKindName, event: DeliveryEvent, options: GuardOptions = {}) => {
  const guard = statusGuard(kind, event, options);
  return guard === undefined ? '' : ` and ${guard}`;
};

/**
 * The status `event` writes on a row of `kind`: the table's `to`, or, when that depends on the
 * status before (read from `column`), a case naming the statuses of each but the commonest.
 */
function statusAfter(kind: DeliveryKindName, event: DeliveryEvent, column = 'email_status'): string {
  return once(`after|${kind}|${event}|${column}`, () => buildStatusAfter(kind, event, column));
}

function buildStatusAfter(kind: DeliveryKindName, event: DeliveryEvent, column: string): string {
  const rows = rowsOf(kind, event);
  const targets = [...new Set(rows.map((row) => row.to))];
  const fromsOf = (to: EmailStatus) => rows.filter((row) => row.to === to).map((row) => row.from);
  if (targets.length === 1) return `'${targets[0]}'`;
  const [otherwise, ...named] = targets.sort((a, b) => fromsOf(b).length - fromsOf(a).length);
  return `case ${named.map((to) => `when ${column} ${inList(fromsOf(to))} then '${to}'`).join(' ')} else '${otherwise}' end`;
}

// ---- The claim.

/**
 * A claim, as its worker names it when it records the outcome: the claimed_at the claim wrote, to
 * the microsecond, as ISO 8601 text (a JS Date keeps only milliseconds). Each claim of a row writes
 * a later one: a claim is taken only from a row unclaimed or claimed longer ago than the lease.
 */
export type ClaimToken = string;
const claimTokenOf = (column: string) => `to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

/** The test of `own-claim` (../delivery-transitions.ts) in a statement with `?` placeholders: its parameter is the writer's ClaimToken. */
const OWN_CLAIM = { ownClaim: 'claimed_at = ?::timestamptz' };

/**
 * A claim counts one attempt. Claiming a failed row (its job retried on the queue dashboard) is a
 * re-send, like requeueFailed's: a fresh delivery, its attempts from 1 and its horizon from now.
 */
const COUNT_ATTEMPT = `email_attempts = case when email_status = '${FAILED}' then 1 else email_attempts + 1 end,
            requeued_at = case when email_status = '${FAILED}' then now() else requeued_at end`;

/** A row claimed: its attempt number, and the claim its outcome is written under. */
export type RowClaim = { attempt: number; claim: ClaimToken };

/**
 * Compare-and-set: only one worker moves the row to `sending`, so a job that runs twice sends once.
 * A `sending` row whose claim is older than the lease belongs to a dead worker and may be taken.
 * Undefined when the row is not claimable.
 */
export async function claimRow(em: EntityManager, kind: KindFor<'claim'>, id: string, claimLeaseMs: number): Promise<RowClaim | undefined> {
  const [claimed] = await em.execute<Array<{ email_attempts: number; claim: ClaimToken }>>(
    `update ${tableOf(kind)}
        set email_status = ${statusAfter(kind, 'claim')}, claimed_at = now(), ${COUNT_ATTEMPT}
      where id = ?${andStatus(kind, 'claim', { claimExpired: 'claimed_at < now() - make_interval(secs => ?)' })}
      returning email_attempts, ${claimTokenOf('claimed_at')} as claim`,
    [id, claimLeaseMs / 1000],
  );
  return claimed && { attempt: claimed.email_attempts, claim: claimed.claim };
}

/**
 * Whether the row is still `claim` (no other worker took it since): asked just before sending by a
 * worker whose claim may have passed its lease, so that it does not send what another sends.
 */
export async function holdsClaim(em: EntityManager, kind: KindFor<'claim'>, id: string, claim: ClaimToken): Promise<boolean> {
  const rows = await em.execute<Array<{ id: string }>>(`select id from ${tableOf(kind)} where id = ? and ${OWN_CLAIM.ownClaim}`, [id, claim]);
  return rows.length > 0;
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
  /** The key has added recipients (src/shared/recipients): the message is copied to them once the spam check lets it through. */
  hasRecipients: boolean;
  /** The key's label when its owner asked for it before the email's subject; null otherwise. */
  subjectLabel: string | null;
  /** The key's label, for a subject pattern's {key}; and the owner's layout of the email. */
  keyLabel: string | null;
  emailLayout: { subject: string | null; fieldOrder: string[]; hiddenFields: string[]; files: 'attach' | 'link' };
  /** The key owner's mailbox: whose own spam statistics apply. */
  keyMailbox: string | null;
  spamFilter: SpamFilterLevel;
  /** Whether the owner taught enough marks for their own spam statistics to count. */
  ownerStatistics: boolean;
  /** The verdict of an earlier attempt (checked once per submission), and the owner's mark. */
  spamVerdict: SpamVerdict | null;
  spamMark: SpamMark | null;
  /** The visitor's address as the API saw it (TRUST_PROXY): what the spam check looks up on blocklists. */
  clientIp: string | null;
  /** A test message from the owner console: marked as a test; no spam check (spamFilter off) and no autoresponse (autoresponseOn false). */
  test: boolean;
  /** Whether the key sends an autoresponse: turned on, with a subject and a text. */
  autoresponseOn: boolean;
};

/** A claimed submission: its attempt number, its claim, and what its email needs. */
export type SubmissionClaim = RowClaim & {
  submission: ClaimedSubmission;
  /**
   * The `submission.created` webhook deliveries this claim wrote, for their jobs: those the API left
   * to the workers and whose own job has not written them yet (it was lost, or has not run).
   */
  newWebhookDeliveryIds: string[];
};

/** What runs a parameterised statement: a pg pool or client. */
export type Queryable = Pick<pg.Pool, 'query'>;

/** The claim of src/workers/delivery/submission-claims.ts, by name: each connection parses and plans it once. */
const CLAIM_SUBMISSIONS = {
  name: 'claim-submissions',
  text: `with claimed as (
       update submissions
          set email_status = ${statusAfter('submission', 'claim')}, claimed_at = now(), ${COUNT_ATTEMPT}
        where id = any($1::uuid[])${andStatus('submission', 'claim', { claimExpired: 'claimed_at < now() - make_interval(secs => $2)' })}
        returning id, key_id, email, message, subject, custom_fields, created_at, email_attempts, spam_verdict, spam_mark, claimed_at, client_ip, test),
     -- Each enabled endpoint the key had when the submission came: its delivery, unless written
     -- already (under its fixed id, createdEventId of src/shared/webhooks/created-event-id.ts, or
     -- under another by a version that wrote them at intake).
     webhooks as (
       insert into webhook_deliveries (id, endpoint_id, submission_id)
       select substr(encode(sha256(convert_to(c.id::text || '/' || e.id::text, 'UTF8')), 'hex'), 1, 32)::uuid, e.id, c.id
         from claimed c join webhook_endpoints e on e.key_id = c.key_id and e.enabled and e.created_at <= c.created_at
        where not exists (select 1 from webhook_deliveries d where d.submission_id = c.id and d.endpoint_id = e.id and d.event = 'submission.created')
       on conflict (id) do nothing
       returning id, submission_id)
     select c.id, c.email, c.message, c.subject, c.custom_fields, c.email_attempts, ${claimTokenOf('c.claimed_at')} as claim, k.email as key_email,
            -- A test message is not checked for spam, so it teaches the filter nothing, and gets no autoresponse.
            k.mailbox as key_mailbox, case when c.test then 'off' else k.spam_filter end as spam_filter, c.spam_verdict, c.spam_mark, c.client_ip, c.test,
            case when k.subject_prefix then k.label end as subject_label, k.label as key_label,
            k.email_subject, k.email_field_order, k.email_hidden_fields, k.email_files,
            -- Milliseconds since the epoch: unambiguous, whatever text form the driver gives a timestamptz.
            (extract(epoch from c.created_at) * 1000)::float8 as created_ms,
            (select count(*)::int from attachments a where a.submission_id = c.id) as attachment_count,
            case when b.suppressed_until > now() then (extract(epoch from b.suppressed_until) * 1000)::float8 end as suppressed_ms,
            mc.complained_at is not null as complained,
            exists (select 1 from key_recipients r where r.key_id = c.key_id) as has_recipients,
            coalesce(not c.test and k.autoresponse_enabled and k.autoresponse_subject is not null and k.autoresponse_text is not null, false) as autoresponse_on,
            array(select w.id from webhooks w where w.submission_id = c.id) as new_webhook_delivery_ids,
            coalesce((select m.spam >= $3 and m.ham >= $3 from owner_spam_marks m
              where m.mailbox = k.mailbox), false) as owner_statistics
       from claimed c left join verification_keys k on k.id = c.key_id
            left join address_bounces b on b.address = k.email
            left join mailbox_complaints mc on mc.mailbox = k.mailbox`,
};

/**
 * The claims of submissions (each the same compare-and-set as claimRow, so only one worker claims
 * a row) and what their emails need, in one statement: the rows, their keys' addresses and how
 * many files each has. Hydrating the row and its key through the ORM was a large share of a
 * worker's CPU (docs/benchmarks.md#scenarios-and-targets); the jobs that start together share the statement
 * (src/workers/delivery/submission-claims.ts). One result per id, in order, undefined for a row that is not
 * claimable; an id given twice is claimed for its first occurrence only, so it is sent once.
 * A prepared statement with the ids as one array parameter: the same text whatever the batch's
 * size, so PostgreSQL parses and plans it once per connection instead of once per batch.
 * `ownerMinLearns`: the marks of each kind an owner's own spam statistics need to count (the spam
 * feature's OWNER_MIN_LEARNS, handed in by the worker: submissions imports nothing of spam).
 */
export async function claimSubmissions(
  db: StatementRunner,
  ids: string[],
  claimLeaseMs: number,
  ownerMinLearns: number,
): Promise<Array<SubmissionClaim | undefined>> {
  const { rows } = await db.query<{
    id: string;
    email: string;
    message: string;
    subject: string;
    custom_fields: CustomFields;
    created_ms: number;
    email_attempts: number;
    claim: ClaimToken;
    key_email: string | null;
    attachment_count: number;
    suppressed_ms: number | null;
    complained: boolean;
    has_recipients: boolean;
    key_mailbox: string | null;
    subject_label: string | null;
    key_label: string | null;
    email_subject: string | null;
    email_field_order: string[] | null;
    email_hidden_fields: string[] | null;
    email_files: 'attach' | 'link' | null;
    spam_filter: SpamFilterLevel | null;
    spam_verdict: SpamVerdict | null;
    spam_mark: SpamMark | null;
    owner_statistics: boolean;
    client_ip: string | null;
    test: boolean;
    autoresponse_on: boolean;
    new_webhook_delivery_ids: string[];
  }>({ ...CLAIM_SUBMISSIONS, values: [ids, claimLeaseMs / 1000, ownerMinLearns] });
  const byId = new Map(rows.map((row) => [row.id, row]));
  return ids.map((id) => {
    // PostgreSQL answers a uuid in lower case.
    const row = byId.get(id.toLowerCase());
    if (!row) return undefined;
    byId.delete(row.id);
    return {
      attempt: row.email_attempts,
      claim: row.claim,
      submission: {
        id: row.id,
        email: row.email,
        message: row.message,
        subject: row.subject,
        customFields: row.custom_fields,
        createdAt: new Date(row.created_ms),
        keyEmail: row.key_email,
        attachmentCount: row.attachment_count,
        suppressedUntil: row.suppressed_ms === null ? null : new Date(row.suppressed_ms),
        complained: row.complained,
        hasRecipients: row.has_recipients,
        keyMailbox: row.key_mailbox,
        subjectLabel: row.subject_label,
        keyLabel: row.key_label,
        emailLayout: {
          subject: row.email_subject,
          fieldOrder: row.email_field_order ?? [],
          hiddenFields: row.email_hidden_fields ?? [],
          files: row.email_files ?? 'attach',
        },
        spamFilter: row.spam_filter ?? 'off',
        ownerStatistics: row.owner_statistics,
        spamVerdict: row.spam_verdict,
        spamMark: row.spam_mark,
        clientIp: row.client_ip,
        test: row.test,
        autoresponseOn: row.autoresponse_on,
      },
      newWebhookDeliveryIds: row.new_webhook_delivery_ids,
    };
  });
}

/** Gives a claimed row back untouched (not an attempt): `queued` again, its attempt uncounted. False when it is not (or no longer) `claim`. */
export async function releaseClaim(em: EntityManager, kind: KindFor<'release-claim'>, id: string, claim: ClaimToken): Promise<boolean> {
  const result = await em.execute<{ affectedRows: number }>(
    `update ${tableOf(kind)} set email_status = ${statusAfter(kind, 'release-claim')}, claimed_at = null, email_attempts = greatest(email_attempts - 1, 0)
      where id = ?${andStatus(kind, 'release-claim', OWN_CLAIM)}`,
    [id, claim],
    'run',
  );
  return result.affectedRows > 0;
}

// ---- What a worker records of its attempt: each write only while the row is still the worker's
// claim (`own-claim`), so a worker that outlived its lease writes nothing over the outcome of the
// worker that claimed the row after it (0 rows: the caller says so).

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

/** The guard of a failure: `retry` and `give-up` are one statement, so they must apply to the same statuses. */
function failureGuard(kind: KindFor<'retry'>): string {
  const guard = andStatus(kind, 'retry', OWN_CLAIM);
  if (guard !== andStatus(kind, 'give-up', OWN_CLAIM)) throw new Error(`retry and give-up of a ${kind} row must move it from the same statuses`);
  return guard;
}

/**
 * Releases the claim after a failed attempt: `retrying` (the `retry` event), or `failed` (`give-up`)
 * when the policy says it is over. A submission's attempt joins its history in the same statement,
 * and a `retrying` one says when its job's timer ends. Undefined when the row is no longer `claim`
 * (another worker's now, or deleted): nothing is written.
 */
export async function recordFailure(
  em: EntityManager,
  kind: KindFor<'retry'>,
  id: string,
  claim: ClaimToken,
  policy: FailurePolicy,
): Promise<'failed' | 'retrying' | undefined> {
  const over = '(? or coalesce(requeued_at, created_at) < now() - make_interval(secs => ?) or email_attempts >= ?)';
  const overValues = [policy.final, policy.retryHorizonMs / 1000, policy.maxAttempts ?? 2 ** 31 - 1];
  const status = `case when ${over} then ${statusAfter(kind, 'give-up')} else ${statusAfter(kind, 'retry')} end`;
  if (kind === 'submission' && policy.retry) {
    const [row] = await em.execute<Array<{ email_status: 'failed' | 'retrying' }>>(
      `with recorded as (
         update submissions
            set email_status = ${status},
                next_attempt_at = case when ${over} then null else now() + make_interval(secs => ?) end,
                last_error = ?, claimed_at = null
          where id = ?${failureGuard(kind)}
          returning id, email_status, email_attempts, last_error),
       logged as (
         insert into delivery_attempts (submission_id, attempt, outcome, response, worker)
         select id, email_attempts, email_status, last_error, ? from recorded)
       select email_status from recorded`,
      [...overValues, ...overValues, policy.retry.delayMs / 1000, policy.reason, id, claim, policy.retry.worker],
    );
    return row?.email_status;
  }
  const [row] = await em.execute<Array<{ email_status: 'failed' | 'retrying' }>>(
    `update ${tableOf(kind)}
        set email_status = ${status},
            last_error = ?, claimed_at = null${kind === 'webhook' ? ', last_response_code = ?' : ''}
      where id = ?${failureGuard(kind)}
      returning email_status`,
    [...overValues, policy.reason, ...(kind === 'webhook' ? [policy.responseCode ?? null] : []), id, claim],
  );
  return row?.email_status;
}

/** A claimed email that is not attempted: its mailbox is suppressed (`reason` says why and until when). False when it is not (or no longer) `claim`. */
export async function recordSuppressed(em: EntityManager, kind: KindFor<'suppress'>, id: string, claim: ClaimToken, reason: string): Promise<boolean> {
  const result = await em.execute<{ affectedRows: number }>(
    `update ${tableOf(kind)} set email_status = ${statusAfter(kind, 'suppress')}, claimed_at = null, last_error = ? where id = ?${andStatus(kind, 'suppress', OWN_CLAIM)}`,
    [reason, id, claim],
    'run',
  );
  return result.affectedRows > 0;
}

/**
 * The spam filter's verdict on a claimed submission; `spam` also ends its delivery (the
 * `spam-verdict` event): kept, not emailed. False when the row is not (or no longer) `claim`.
 */
export async function recordSpamVerdict(
  em: EntityManager,
  id: string,
  claim: ClaimToken,
  verdict: SpamVerdict,
  scan: { score: number; reasons: SpamReason[] } | undefined,
): Promise<boolean> {
  const result = await em.execute<{ affectedRows: number }>(
    `update submissions
        set spam_verdict = ?, spam_score = ?, spam_reasons = ?::jsonb, spam_checked_at = now(),
            email_status = case when ? = 'spam' then ${statusAfter('submission', 'spam-verdict')} else email_status end,
            claimed_at = case when ? = 'spam' then null else claimed_at end
      where id = ?${andStatus('submission', 'spam-verdict', OWN_CLAIM)}`,
    [verdict, scan?.score ?? null, scan ? JSON.stringify(scan.reasons) : null, verdict, verdict, id, claim],
    'run',
  );
  return result.affectedRows > 0;
}

/**
 * The spam verdict a webhook's worker found on a submission whose email no worker holds (it waits
 * for its job: queued, or retrying), written only where none is stored and the owner has not said
 * not spam: the first verdict stands, and the email and the webhooks act on that one. `spam` also
 * ends its delivery (the `spam-verdict-ahead` event): kept, not emailed. False when a verdict was
 * there first or a worker holds the email (its own check decides, and is what the webhook reads).
 */
export async function recordSpamVerdictAhead(
  em: EntityManager,
  id: string,
  verdict: SpamVerdict,
  scan: { score: number; reasons: SpamReason[] } | undefined,
): Promise<boolean> {
  const result = await em.execute<{ affectedRows: number }>(
    `update submissions
        set spam_verdict = ?, spam_score = ?, spam_reasons = ?::jsonb, spam_checked_at = now(),
            email_status = case when ? = 'spam' then ${statusAfter('submission', 'spam-verdict-ahead')} else email_status end
      where id = ? and spam_verdict is null and spam_mark is distinct from 'ham'${andStatus('submission', 'spam-verdict-ahead')}`,
    [verdict, scan?.score ?? null, scan ? JSON.stringify(scan.reasons) : null, verdict, id],
    'run',
  );
  return result.affectedRows > 0;
}

export type SentRow = { id: string; created_at: Date; sent_at: Date };

/** A submission's spam verdict, written with its `sent` (src/workers/spam/spam-check.ts). */
export type SpamResult = { verdict: SpamVerdict; score: number | null; reasons: SpamReason[] | null };

/**
 * `claim`: the sender's; `response`: the SMTP server's reply to the message (250 …), kept in a
 * submission's history; `autoresponse`: the submission's autoresponse outcome when it was known
 * before the send (src/shared/autoresponses), written unless one was written before.
 */
export type SentItem = {
  id: string;
  claim: ClaimToken;
  messageId: string;
  response?: string | undefined;
  spam?: SpamResult | undefined;
  autoresponse?: AutoresponseOutcome | undefined;
};

/**
 * Marks a batch of rows of one kind `sent`, with their Message-IDs, in one statement (see
 * src/workers/delivery/sent-recorder.ts). Prepared by name (one per kind): parsed and planned once per connection.
 * A bounce may come back before this write (the relay reports within a second, this commit can
 * wait longer): a row already `bounced` or `complained` keeps that status. `worker` names the
 * process in the submissions' delivery history. A row that is no longer its sender's claim is left
 * as it is and missing from the answer.
 */
export async function recordSent(db: StatementRunner, kind: KindFor<'sent'>, sent: SentItem[], worker: string): Promise<SentRow[]> {
  const status = `email_status = ${statusAfter(kind, 'sent', 't.email_status')}`;
  const guard = andStatus(kind, 'sent', { column: 't.email_status', ownClaim: 't.claimed_at = v.claimed_at' });
  if (kind !== 'submission') {
    const result = await db.query<SentRow>({
      name: `record-sent-${kind}`,
      text: `update ${tableOf(kind)} as t
          set ${status}, sent_at = now(), message_id = v.message_id, last_error = null
         from unnest($1::uuid[], $2::text[], $3::timestamptz[]) as v(id, message_id, claimed_at)
        where t.id = v.id${guard}
        returning t.id, t.created_at, t.sent_at`,
      values: [sent.map((item) => item.id), sent.map((item) => item.messageId), sent.map((item) => item.claim)],
    });
    return result.rows;
  }
  // A submission's spam verdict (ham, or unchecked when the filter failed) rides on this write:
  // no statement of its own per email (docs/benchmarks.md#scenarios-and-targets). So do its attempt's row in the
  // history (one more insert in the same statement, not a round trip) and an autoresponse outcome
  // known before the send (`off` for a key without one): no transaction of its own per email.
  const result = await db.query<SentRow>({
    name: 'record-sent-submission',
    text: `with recorded as (
       update submissions as t
          set ${status}, sent_at = now(), message_id = v.message_id, last_error = null,
              spam_verdict = coalesce(v.verdict, t.spam_verdict),
              spam_score = case when v.verdict is null then t.spam_score else v.score end,
              spam_reasons = case when v.verdict is null then t.spam_reasons else v.reasons end,
              spam_checked_at = case when v.verdict is null then t.spam_checked_at else now() end,
              autoresponse = coalesce(t.autoresponse, v.autoresponse)
         from unnest($1::uuid[], $2::text[], $3::text[], $4::real[], $5::jsonb[], $6::text[], $8::timestamptz[], $9::text[])
              as v(id, message_id, verdict, score, reasons, response, claimed_at, autoresponse)
        where t.id = v.id${guard}
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
      sent.map((item) => item.claim),
      sent.map((item) => item.autoresponse ?? null),
    ],
  });
  return result.rows;
}

/** A webhook delivery that will not be made (its submission is held as spam): `skipped`, with why. False when it is not (or no longer) `claim`. */
export async function recordSkipped(em: EntityManager, id: string, claim: ClaimToken, reason: string): Promise<boolean> {
  const result = await em.execute<{ affectedRows: number }>(
    `update webhook_deliveries set email_status = ${statusAfter('webhook', 'skip')}, claimed_at = null, last_error = ? where id = ?${andStatus('webhook', 'skip', OWN_CLAIM)}`,
    [reason, id, claim],
    'run',
  );
  return result.affectedRows > 0;
}

/** A webhook answered 2xx: `sent`, with the answer's status. Undefined when the row is no longer `claim`: nothing is written. */
export async function recordDelivered(em: EntityManager, id: string, claim: ClaimToken, responseCode: number): Promise<SentRow | undefined> {
  const [row] = await em.execute<SentRow[]>(
    `update webhook_deliveries
        set email_status = ${statusAfter('webhook', 'delivered')}, sent_at = now(), last_error = null, last_response_code = ?, claimed_at = null
      where id = ?${andStatus('webhook', 'delivered', OWN_CLAIM)}
      returning id, created_at, sent_at`,
    [responseCode, id, claim],
  );
  return row;
}

// ---- What came back after the relay took the email (src/shared/bounces/record.ts).

/** A report read from a bounce or an abuse complaint, as src/shared/bounces/record.ts keeps it on the row. */
export type ReturnedReport = { type: BounceType; status: string | null; diagnostic: string | null; reportingMta: string | null };

/**
 * Keeps `report` on its row; `event` is the status change it makes (`bounce`, `complain`), none for
 * a soft bounce or a delay. Run in the transaction that locked the row. False when there is no such
 * row, or its status refuses the event.
 */
export async function recordReturnedReport(
  db: Queryable,
  kind: KindFor<'bounce'>,
  id: string,
  event: 'bounce' | 'complain' | undefined,
  report: ReturnedReport,
): Promise<boolean> {
  const result = await db.query(
    `update ${tableOf(kind)} set ${event ? `email_status = ${statusAfter(kind, event)}, ` : ''}bounce_type = $2, bounce_status = $3, bounce_diagnostic = $4,
            bounce_mta = $5, bounced_at = now()
      where id = $1${event ? andStatus(kind, event) : ''}`,
    [id, report.type, report.status, report.diagnostic, report.reportingMta],
  );
  return (result.rowCount ?? 0) > 0;
}

// ---- A row put back in the queue.

/** The key that owns a row, per kind: an owner may re-send only rows of their keys. */
const OWNED_BY: Record<KindFor<'requeue-for-resend'>, string> = {
  submission: 'key_id = ?',
  'recipient-copy': 'key_id = ?',
  webhook: 'endpoint_id in (select id from webhook_endpoints where key_id = ?)',
};

/** What a re-send forgets: the report of the earlier email (emails only; webhooks have none). */
const FORGET_REPORT: Record<KindFor<'requeue-for-resend'>, string> = {
  submission: ', bounce_type = null, bounce_status = null, bounce_diagnostic = null, bounce_mta = null, bounced_at = null',
  'recipient-copy': ', bounce_type = null, bounce_status = null, bounce_diagnostic = null, bounce_mta = null, bounced_at = null',
  webhook: '',
};

/**
 * A failed, bounced or suppressed row (of key `keyId`, when given) back to `queued`, for a re-send:
 * the reconciler finds it should the enqueue that follows be lost. A fresh delivery: its attempts
 * count from 0 and its retry horizon from now, so a row failed for good after the horizon is not
 * failed again by its first temporary refusal. False when there is no such row.
 */
export async function requeueFailed(em: EntityManager, kind: KindFor<'requeue-for-resend'>, id: string, keyId?: string): Promise<boolean> {
  const rows = await em.execute<Array<{ id: string }>>(
    `update ${tableOf(kind)} set email_status = ${statusAfter(kind, 'requeue-for-resend')}, claimed_at = null, email_attempts = 0, requeued_at = now()${FORGET_REPORT[kind]}
      where id = ?${andStatus(kind, 'requeue-for-resend')} ${keyId === undefined ? '' : `and ${OWNED_BY[kind]}`}
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
    `update submissions set email_status = ${statusAfter('submission', 'release-held')}, requeued_at = now()
      where not settled${andStatus('submission', 'release-held')} and key_id in (select id from verification_keys where mailbox = ?)
      returning id`,
    [mailbox],
  );
  return released.map((row) => row.id);
}

/**
 * The copies of a submission's email to its key's added recipients (src/shared/recipients), made
 * once per recipient mailbox: for each address added before the submission came, `queued` when it
 * had confirmed and `held` until it does (the kind's CREATED_AS). The recipients' rows are locked
 * (shared) while the copies are made, so that a confirmation at the same moment either comes first
 * and is read here, or waits and then releases what this wrote. Returns the copies made now; a
 * second run (a retried attempt) makes none.
 */
export async function createCopies(em: EntityManager, submissionId: string): Promise<Array<{ id: string; status: EmailStatus }>> {
  return em.execute<Array<{ id: string; status: EmailStatus }>>(
    `insert into recipient_copies (id, submission_id, key_id, recipient_id, email, mailbox, email_status)
     select gen_random_uuid(), s.id, s.key_id, r.id, r.email, r.mailbox, case when r.confirmed_at is null then '${HELD}' else '${QUEUED}' end
       from submissions s join key_recipients r on r.key_id = s.key_id and r.created_at <= s.created_at
      where s.id = ?
        for share of r
     on conflict (submission_id, mailbox) do nothing
     returning id, email_status as status`,
    [submissionId],
  );
}

/** An added recipient confirmed (`release-held`): its held copies become `queued`, their horizon counted from now; their ids, to enqueue. */
export async function releaseHeldCopies(em: EntityManager, recipientId: string): Promise<string[]> {
  const released = await em.execute<Array<{ id: string }>>(
    `update recipient_copies set email_status = ${statusAfter('recipient-copy', 'release-held')}, requeued_at = now()
      where recipient_id = ?${andStatus('recipient-copy', 'release-held')}
      returning id`,
    [recipientId],
  );
  return released.map((row) => row.id);
}

/**
 * The owner's mark on a submission (src/api/owners/spam-marks.ts), under the row's lock; `reserved`:
 * a place in the teaching allowance is taken for it (spam_taught_at pending until the filter
 * answers). "Not spam" on a submission held as spam is the `mark-not-spam` event: queued again as
 * a fresh delivery. Returns whether it was so released.
 */
export async function writeSpamMark(em: EntityManager, id: string, mark: SpamMark, reserved: boolean): Promise<boolean> {
  const release = mark === 'ham';
  const moves = `? and ${statusCondition('submission', 'mark-not-spam', { column: 'b.before' })}`;
  const rows = await em.execute<Array<{ released: boolean }>>(
    `update submissions s
        set spam_mark = ?, spam_marked_at = now(),
            spam_taught_at = case when ? then now() when s.spam_mark = ? then s.spam_taught_at else null end,
            spam_teach_pending = case when ? then true when s.spam_mark = ? then s.spam_teach_pending else false end,
            email_status = case when ${moves} then ${statusAfter('submission', 'mark-not-spam', 'b.before')} else s.email_status end,
            requeued_at = case when ${moves} then now() else s.requeued_at end,
            email_attempts = case when ${moves} then 0 else s.email_attempts end
       from (select id, email_status as before from submissions where id = ? for update) b
      where s.id = b.id
      returning (${moves}) as released`,
    [mark, reserved, mark, reserved, mark, release, release, release, id, release],
  );
  return rows[0]?.released ?? false;
}

/** The webhook events held back with a submission the owner marked not spam (`mark-not-spam`): `queued`; their ids, to enqueue. */
export async function releaseSkippedWebhooks(em: EntityManager, submissionId: string): Promise<string[]> {
  const released = await em.execute<Array<{ id: string }>>(
    `update webhook_deliveries set email_status = ${statusAfter('webhook', 'mark-not-spam')}, last_error = null
      where submission_id = ?${andStatus('webhook', 'mark-not-spam')} returning id`,
    [submissionId],
  );
  return released.map((row) => row.id);
}
