// Which delivery statuses mean what to the workers, in one place: a new status (one that holds a row
// back, say) is added here and the claim, the reconciler and retention follow.
import type { EmailStatus } from '../shared/db/entities.ts';

/** A worker may claim the row and send (a `failed` one only when an operator retries its job). */
export const CLAIMABLE: readonly EmailStatus[] = ['queued', 'retrying', 'failed'];
/** The row waits for a delivery job: the reconciler enqueues it again when it has none. */
export const AWAITING_JOB: readonly EmailStatus[] = ['queued', 'retrying'];
/** A worker claimed it; past the claim lease its worker is presumed dead. */
export const IN_FLIGHT: EmailStatus = 'sending';
/** Nothing more will happen to the row: retention may delete it. */
export const SETTLED: readonly EmailStatus[] = ['sent', 'failed', 'skipped'];

/** `'a', 'b'` for an SQL `in (...)` list (the statuses are constants, never input). */
export const sqlList = (statuses: readonly EmailStatus[]) => statuses.map((status) => `'${status}'`).join(', ');
