// What a worker records of a delivery's attempt, for every kind (../delivery-kinds.ts): sent,
// retrying, failed, suppressed, a spam verdict, skipped, delivered; and a report that came back
// after the relay took the email (bounced, complained). Guards and statuses: ./status-sql.ts.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { StatementRunner } from '../../infra/db/pg-pool.ts';
import type { BounceType } from '../../words/bounce-columns.ts';
import type { SpamReason, SpamVerdict } from '../../words/spam-kinds.ts';
import type { AutoresponseOutcome } from '../../words/autoresponse-kinds.ts';
import type { KindFor } from '../delivery-transitions.ts';
import { andStatus, OWN_CLAIM, statusAfter, tableOf, type ClaimToken, type Queryable } from './status-sql.ts';

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

/** A verdict's columns; `spam` also moves the email on by `event` (kept, not emailed). */
function verdictColumns(
  event: 'spam-verdict' | 'spam-verdict-ahead',
  verdict: SpamVerdict,
  scan: { score: number; reasons: SpamReason[] } | undefined,
): { sql: string; params: unknown[] } {
  return {
    sql: `spam_verdict = ?, spam_score = ?, spam_reasons = ?::jsonb, spam_checked_at = now(),
            email_status = case when ? = 'spam' then ${statusAfter('submission', event)} else email_status end`,
    params: [verdict, scan?.score ?? null, scan ? JSON.stringify(scan.reasons) : null, verdict],
  };
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
  const set = verdictColumns('spam-verdict', verdict, scan);
  const result = await em.execute<{ affectedRows: number }>(
    `update submissions
        set ${set.sql},
            claimed_at = case when ? = 'spam' then null else claimed_at end
      where id = ?${andStatus('submission', 'spam-verdict', OWN_CLAIM)}`,
    [...set.params, verdict, id, claim],
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
  const set = verdictColumns('spam-verdict-ahead', verdict, scan);
  const result = await em.execute<{ affectedRows: number }>(
    `update submissions
        set ${set.sql}
      where id = ? and spam_verdict is null and spam_mark is distinct from 'ham'${andStatus('submission', 'spam-verdict-ahead')}`,
    [...set.params, id],
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
