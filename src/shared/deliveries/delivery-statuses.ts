// Which delivery statuses mean what, in one place, for the table of status changes
// (./delivery-transitions.ts) and the workers: a new status is added here and the
// claim, the reconciler, retention and the re-send follow.
import type { EmailStatus } from './delivery-columns.ts';

/** A worker may claim the row and send (a `failed` one only when an operator retries its job). */
export const CLAIMABLE: readonly EmailStatus[] = ['queued', 'retrying', 'failed'];
/** The row waits for a delivery job: the reconciler enqueues it again when it has none. */
export const AWAITING_JOB: readonly EmailStatus[] = ['queued', 'retrying'];
/** A worker claimed it; past the claim lease its worker is presumed dead. */
export const IN_FLIGHT: EmailStatus = 'sending';
/** Where a new, re-sent or released row starts: waiting for its job. */
export const QUEUED: EmailStatus = 'queued';
/** A submission kept back until its recipient confirms the mailbox (src/shared/keys/consent.ts). */
export const HELD: EmailStatus = 'held';
/** A delivery that ended without the email: the queue dashboard's retry claims it again as a re-send. */
export const FAILED: EmailStatus = 'failed';
/** Only a row in one of these may be re-sent by its owner or the operator. */
export const RESENDABLE: readonly EmailStatus[] = ['failed', 'bounced', 'suppressed'];
/** A report came back after the relay took the email: the row says so, whatever the worker records after. */
export const REPORTED: readonly EmailStatus[] = ['bounced', 'complained'];
/**
 * Nothing more will happen to the row: retention may delete it. The generated column
 * `submissions.settled` repeats this list (changing it takes a migration).
 */
export const SETTLED: readonly EmailStatus[] = ['sent', 'failed', 'skipped', 'bounced', 'complained', 'suppressed', 'spam'];

/** `'a', 'b'` for an SQL `in (...)` list (the statuses are constants, never input). */
export const sqlList = (statuses: readonly EmailStatus[]) => statuses.map((status) => `'${status}'`).join(', ');
