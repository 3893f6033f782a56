// Whether an email is attempted at all, given what came back from its recipient before: an address
// that bounced repeatedly is suppressed for a while (the count and the time are kept by
// src/shared/bounces/record.ts), and a mailbox that reported an email of this service as spam is
// suppressed until its owner signs in. No I/O: the claim loads both facts with the row.
import type { KeyEmail } from '../keys/entities.ts';

/** The reason a suppressed row carries when its mailbox complained. */
export const COMPLAINT_SUPPRESSION = 'not attempted: this address reported an email of this service as spam; suppressed until its owner signs in';

/** Why a submission's email is not attempted (the row's reason), or undefined when it may go. A complaint wins: it lasts longer. */
export function submissionSuppression(recipient: { complained: boolean; suppressedUntil: Date | null }): string | undefined {
  if (recipient.complained) return COMPLAINT_SUPPRESSION;
  if (recipient.suppressedUntil) {
    return `not attempted: this address bounced repeatedly; suppressed until ${recipient.suppressedUntil.toISOString()} or until its owner signs in`;
  }
  return undefined;
}

/**
 * What anyone may cause to be sent to an address (a key created for it, the request to confirm it,
 * the request to confirm it as another owner's added recipient):
 * not sent once the address reported an email of this service as spam, until its owner signs in.
 * The sign-in link, the keys asked for and the notices about the owner's own webhooks still go.
 */
const STOPPED_BY_A_COMPLAINT: ReadonlySet<KeyEmail['kind']> = new Set(['new-key', 'confirm', 'recipient-confirm']);

/** Whether a complaint of the mailbox stops a key email of this kind. */
export const complaintStops = (kind: KeyEmail['kind']): boolean => STOPPED_BY_A_COMPLAINT.has(kind);
