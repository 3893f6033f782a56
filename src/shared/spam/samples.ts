// The sample of a claimed submission that the spam filter checks (src/shared/spam/spam-filter.ts turns
// it into the message rspamd reads, sampleMessage): the content of its email, its files by name.
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
