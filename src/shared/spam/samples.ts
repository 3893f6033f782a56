// The sample of a claimed submission that the spam filter checks (src/shared/spam/spam-filter.ts turns
// it into the message rspamd reads, sampleMessage): the content of its email, its files by name.
import type { Submission, VerificationKey } from '../infra/db/entities.ts';
import type { ClaimedSubmission } from '../submissions/data/delivery-status.ts';
import type { SpamSample } from './spam-filter.ts';

export type SampledSubmission = Pick<ClaimedSubmission, 'keyEmail' | 'keyMailbox' | 'email' | 'subject' | 'message' | 'customFields' | 'ownerStatistics'>;

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
  };
}

/** A marked submission as teaching loads it: its row and its key. */
export type MarkedSubmission = Pick<Submission, 'email' | 'subject' | 'message' | 'customFields'> & { key: Pick<VerificationKey, 'email' | 'mailbox'> };

/** The sample that teaches the filter an owner's mark of the submission. */
export function teachingSampleOf(submission: MarkedSubmission, filenames: string[], mailFrom: string): SpamSample {
  return {
    mailFrom,
    ownerEmail: submission.key.email,
    ownerMailbox: submission.key.mailbox,
    visitorEmail: submission.email,
    subject: submission.subject,
    message: submission.message,
    customFields: submission.customFields,
    filenames,
  };
}
