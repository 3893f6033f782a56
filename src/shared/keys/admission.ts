// Whether an authenticated submission's email goes out now (`queued`), waits for its recipient's
// consent (`held`), or is not sent at all (`skipped`, not_email_sent), decided from the request, the
// mailbox's confirmation and its hourly allowance; see src/shared/keys/consent.ts for the rule and its
// figures. No I/O: src/api/submissions/admit.ts asks the allowance of PostgreSQL in between.

export type AdmissionRequest = { notEmailSent: boolean; fileCount: number };
export type AdmittedStatus = 'queued' | 'held' | 'skipped';

/**
 * Decided by the request and the mailbox alone, or `ask-allowance` when it takes one submission
 * email from the mailbox's hourly allowance. A confirmed mailbox gets everything; a skipped
 * submission without files costs nothing; an unconfirmed mailbox spends its allowance on every
 * email and on every skipped submission that stores files (storage is a cost too).
 */
export function admissionBeforeAllowance(request: AdmissionRequest, mailboxConfirmed: boolean): AdmittedStatus | 'ask-allowance' {
  if (request.notEmailSent && request.fileCount === 0) return 'skipped';
  if (mailboxConfirmed) return request.notEmailSent ? 'skipped' : 'queued';
  return 'ask-allowance';
}

/**
 * Once the allowance answered (`allowed`: one was left and is now taken): past it, emails are held
 * (and the mailbox asked, once, to confirm) while skipped submissions with files are refused.
 */
export function admissionByAllowance(request: AdmissionRequest, allowed: boolean): AdmittedStatus | 'refused' {
  if (request.notEmailSent) return allowed ? 'skipped' : 'refused';
  return allowed ? 'queued' : 'held';
}

/** Seconds until the next clock hour, when a spent allowance is whole again: the refusal's Retry-After. */
export const secondsToNextHour = (now: number = Date.now()) => 3600 - (Math.floor(now / 1000) % 3600);
