// The delivery state machine's one API: every kind of delivery (the owner's email, a key email, an
// autoresponse, a copy to an added recipient, a webhook or chat post) is claimed, recorded,
// released and found through these functions, and the API, the workers and the other features call
// them here (they import no data module of this feature: test/unit/module-boundaries.test.ts).
// Which statuses each event moves a row between is the table of ./delivery-transitions.ts.
export type { ClaimToken, Queryable } from './data/status-sql.ts';
export { claimRow, claimSubmissions, holdsClaim, releaseClaim, type ClaimedSubmission, type RowClaim, type SubmissionClaim } from './data/claims.ts';
export {
  recordDelivered,
  recordFailure,
  recordReturnedReport,
  recordSent,
  recordSkipped,
  recordSpamVerdict,
  recordSpamVerdictAhead,
  recordSuppressed,
  type FailurePolicy,
  type ReturnedReport,
  type SentItem,
  type SentRow,
  type SpamResult,
} from './data/outcomes.ts';
export { releaseHeld, releaseHeldCopies, releaseSkippedWebhooks, requeueFailed, writeSpamMark } from './data/releases.ts';
export { createCopies } from './data/copies.ts';
export { findAwaitingJob, findUnfinishedFanOuts, hasComplained, type AwaitingRow } from './data/delivery-rows.ts';
