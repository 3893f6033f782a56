// The submission job: the notification email to the key's owner.
import { UnrecoverableError, type Job, type Queue } from 'bullmq';
import type { Attachment } from '../../shared/submissions/entities.ts';
import { findAttachments } from '../../shared/submissions/submissions.ts';
import type { DeliveryJob, DeliveryJobs } from '../../shared/submissions/delivery-jobs.ts';
import { followWithAutoresponse } from './autoresponse-email.ts';
import { outcomeFromKey, type AutoresponseOutcome } from '../../shared/autoresponses/autoresponses.ts';
import { autoresponses } from '../../shared/infra/metrics.ts';
import type { Storage } from '../../shared/infra/storage.ts';
import { prepareFiles } from './attachments.ts';
import { renderSubjectPattern } from '../../shared/keys/email-layout.ts';
import { renderSubmissionEmail } from './render-submission.ts';
import type { SubmissionClaimer } from './submission-claims.ts';
import { messageIdFor } from '../../shared/submissions/delivery-kinds.ts';
import { submissionSuppression } from '../../shared/bounces/suppression.ts';
import { sendTracked, SuppressedError, type SendContext, type SendOutcome } from './send.ts';
import type { SpamChecker } from '../spam/spam-check.ts';

/** What the submission email needs of the configuration. */
export type SubmissionSettings = { mailFrom: string; attachMaxBytes: number; linkTtlSeconds: number };

export type SubmissionContext = SendContext &
  SubmissionSettings & { storage: Storage; claimSubmission: SubmissionClaimer; spamCheck: SpamChecker; queue: Queue<DeliveryJob> };

/**
 * The owner's email, then, once it is sent or settled (held as spam, suppressed, failed for good),
 * the visitor's autoresponse decided and queued as a job of its own: it never delays the owner's email.
 * A key without an autoresponse (the usual case) needs no decision: its `off` rides on the `sent` write.
 */
export async function deliverSubmission(context: SubmissionContext, job: Job<DeliveryJobs['submission']>): Promise<SendOutcome> {
  const known: { autoresponse?: AutoresponseOutcome | undefined } = {};
  let outcome: SendOutcome;
  try {
    outcome = await deliverOwnerEmail(context, job, known);
  } catch (error) {
    if (error instanceof UnrecoverableError) await followWithAutoresponse(context, job.data.submissionId, job.data.requestId);
    throw error;
  }
  if (outcome === 'sent' && known.autoresponse) autoresponses.inc({ outcome: known.autoresponse });
  else if (outcome !== 'not-claimable') await followWithAutoresponse(context, job.data.submissionId, job.data.requestId);
  return outcome;
}

/** `known`: set to the autoresponse outcome the claim already tells, which the `sent` write records. */
async function deliverOwnerEmail(
  context: SubmissionContext,
  job: Job<DeliveryJobs['submission']>,
  known: { autoresponse?: AutoresponseOutcome | undefined },
): Promise<SendOutcome> {
  const { submissionId } = job.data;
  const claim = async () => {
    const claimed = await context.claimSubmission(submissionId);
    return claimed && { attempt: claimed.attempt, claim: claimed.claim, row: claimed.submission };
  };
  return sendTracked(context, 'submission', submissionId, job, claim, async (submission, claimToken) => {
    if (submission.keyEmail === null) throw new Error(`the key of submission ${submissionId} is gone`);
    const suppressed = submissionSuppression(submission);
    if (suppressed) throw new SuppressedError(suppressed);
    // Most submissions carry no file: their email skips the attachments query.
    const stored: Attachment[] = submission.attachmentCount === 0 ? [] : await findAttachments(context.em, submissionId);
    // Held as spam: throws, and nothing is sent.
    const spam = await context.spamCheck(
      context.em,
      submission,
      claimToken,
      stored.map((file) => file.filename),
      context.log,
    );
    const files = await prepareFiles(stored, context.storage, {
      // link: every file a signed link, whatever its size (no total is at most -1 byte).
      attachMaxBytes: submission.emailLayout.files === 'link' ? -1 : context.attachMaxBytes,
      linkTtlSeconds: context.linkTtlSeconds,
    });
    // The key's label first, if its owner asked: one inbox, several forms told apart at a glance.
    // A subject pattern of the owner's takes the place of both.
    const subject = submission.emailLayout.subject
      ? renderSubjectPattern(submission.emailLayout.subject, { ...submission, key: submission.keyLabel })
      : submission.subjectLabel
        ? `[${submission.subjectLabel}] ${submission.subject}`
        : submission.subject;
    const email = renderSubmissionEmail({ ...submission, subject }, files.listed, context.linkTtlSeconds, submission.emailLayout);
    known.autoresponse = outcomeFromKey(submission);
    return {
      message: {
        from: context.mailFrom,
        to: submission.keyEmail,
        replyTo: submission.email,
        subject: email.subject,
        text: email.text,
        html: email.html,
        attachments: files.attachments,
        messageId: messageIdFor('submission', submissionId, context.mailFrom),
      },
      release: files.release,
      spam,
      autoresponse: known.autoresponse,
    };
  });
}
