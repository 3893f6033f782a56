// The delivery rows' reads, for every kind (../delivery-kinds.ts): the rows that await a job and
// the submissions sent without their copies and autoresponse (the reconciler), whether a mailbox
// complained, and when a retrying submission is tried next. Every write of a status is in
// ./claims.ts, ./outcomes.ts, ./releases.ts, built from the table of ../delivery-transitions.ts.
import type { EntityManager } from '@mikro-orm/postgresql';
import { deliveryKinds, type DeliveryKindName } from '../delivery-kinds.ts';
import type { EmailStatus } from '../delivery-columns.ts';
import { IN_FLIGHT, REPORTED, sqlList } from '../delivery-statuses.ts';

const tableOf = (kind: DeliveryKindName) => deliveryKinds[kind].table;

/** The statuses of a settled row whose email the relay took: sent, and what a report made of it. */
const EMAIL_WENT: readonly EmailStatus[] = ['sent', ...REPORTED];

/** Whether `mailbox` reported an email of this service as spam since its owner last signed in. */
export async function hasComplained(em: EntityManager, mailbox: string): Promise<boolean> {
  const rows = await em.execute<Array<{ complained: boolean }>>('select true as complained from mailbox_complaints where mailbox = ?', [mailbox]);
  return rows[0]?.complained === true;
}

/** created_at as text: a JS Date would drop the microseconds and a page cursor would repeat rows. */
export type AwaitingRow = { id: string; created_at: string };

/**
 * The index a kind's status lookups use: (email_status, created_at) on most tables; on submissions,
 * whose claims must not touch an indexed column (HOT updates), (created_at, id) over the rows
 * that are not `settled` (src/shared/infra/db/migrations/Migration20261123063800_submissions_hot_claims.ts).
 */
const OPEN_ROWS: Record<DeliveryKindName, string> = { submission: 'and not settled', 'key-email': '', autoresponse: '', 'recipient-copy': '', webhook: '' };

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

/**
 * When `retrying` submissions are tried next, after a flush brought their jobs' timers forward
 * (../retry-flush.ts). Ids of other kinds match no submission and change nothing.
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

/**
 * Submissions whose owner's email went out (sent, or reported on after it was sent) `settledAfterMs`
 * ago or more, within the last `withinHours`, with no autoresponse outcome: a worker of the previous
 * release sent it, which makes no copies to added recipients and decides no autoresponse (a worker
 * of this one writes the outcome with `sent`, or decides it right after). At most `limit`, oldest
 * first, from the index of the settled rows without an outcome.
 */
export async function findUnfinishedFanOuts(em: EntityManager, settledAfterMs: number, withinHours: number, limit: number): Promise<Array<{ id: string }>> {
  return em.execute<Array<{ id: string }>>(
    `select id from submissions
      where settled and autoresponse is null and sent_at is not null
        and created_at > now() - make_interval(hours => ?)
        and email_status in (${sqlList(EMAIL_WENT)}) and sent_at < now() - make_interval(secs => ?)
      order by created_at, id limit ${limit}`,
    [withinHours, settledAfterMs / 1000],
  );
}
