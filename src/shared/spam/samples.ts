// The sample of a submission that the spam filter checks, and learns when its owner marks it
// (src/shared/spam/spam-filter.ts turns it into the message rspamd reads, sampleMessage): the
// content of its email, its files by name. One builder for both, so a mark teaches what a check asks.
import type { Submission } from '../submissions/entities.ts';
import type { VerificationKey } from '../keys/entities.ts';
import type { ClaimedSubmission } from '../deliveries/deliveries.ts';
import type { SpamSample } from './spam-filter.ts';

/** What a sample holds of a submission; ownerStatistics and clientIp only for a check (see SpamSample). */
export type SampledSubmission = Pick<ClaimedSubmission, 'keyEmail' | 'keyMailbox' | 'email' | 'subject' | 'message' | 'customFields'> &
  Partial<Pick<ClaimedSubmission, 'ownerStatistics' | 'clientIp'>>;

/** The sample of a submission: the one builder of the message that checks and marks alike send. */
export function spamSampleOf(submission: SampledSubmission, filenames: string[], mailFrom: string): SpamSample {
  return {
    mailFrom,
    ownerEmail: submission.keyEmail ?? '',
    ownerMailbox: submission.keyMailbox ?? '',
    visitorEmail: submission.email,
    subject: submission.subject,
    message: submission.message,
    customFields: submission.customFields,
    filenames,
    ownerStatistics: submission.ownerStatistics,
    ...(submission.clientIp ? { visitorIp: submission.clientIp } : {}),
  };
}

/** A marked submission as teaching loads it: its row and its key. */
export type MarkedSubmission = Pick<Submission, 'email' | 'subject' | 'message' | 'customFields'> & { key: Pick<VerificationKey, 'email' | 'mailbox'> };

/**
 * The sample that teaches the filter an owner's mark of the submission: the one its check sent,
 * so that the filter learns what it will be asked (the caller gives the files in the order the
 * check read them: findAttachments, oldest first).
 */
export function teachingSampleOf(submission: MarkedSubmission, filenames: string[], mailFrom: string): SpamSample {
  const { email, subject, message, customFields, key } = submission;
  return spamSampleOf({ keyEmail: key.email, keyMailbox: key.mailbox, email, subject, message, customFields }, filenames, mailFrom);
}

/** A submission as a check reads it outside its email's claim (a webhook's worker, the email held up). */
export { findSubmissionToCheck, type CheckedSubmission } from './data/submissions-to-check.ts';
