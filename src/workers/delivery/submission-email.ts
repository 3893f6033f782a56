// The submission job: the notification email to the key's owner, and the copies to its added recipients.
import { UnrecoverableError, type Job, type Queue } from 'bullmq';
import type { Attachment } from '../../shared/submissions/entities.ts';
import { findAttachments } from '../../shared/submissions/submissions.ts';
import { recipientCopyJob, webhookJob, type DeliveryJob, type DeliveryJobs } from '../../shared/deliveries/delivery-jobs.ts';
import { enqueueDeliveries, enqueueDelivery } from '../../shared/infra/queues/queues.ts';
import { copySubmission } from '../../shared/recipients/recipients.ts';
import { followWithAutoresponse, type AutoresponseSettings } from './autoresponse-email.ts';
import { outcomeFromKey, type AutoresponseOutcome } from '../../shared/autoresponses/autoresponses.ts';
import { autoresponses } from '../../shared/infra/metrics.ts';
import type { Storage } from '../../shared/infra/storage.ts';
import type { SubmissionClaimer } from './submission-claims.ts';
import { submissionMessage, type SubmissionSettings } from './submission-message.ts';
import { submissionSuppression } from '../../shared/bounces/suppression.ts';
import { sendTracked, SuppressedError, type SendContext, type SendOutcome } from './send.ts';
import type { SpamChecker } from '../spam/spam-check.ts';
import { scanSubmissionFiles } from '../../shared/files/files.ts';

export type { SubmissionSettings } from './submission-message.ts';

export type SubmissionContext = SendContext &
  SubmissionSettings & {
    storage: Storage;
    claimSubmission: SubmissionClaimer;
    spamCheck: SpamChecker;
    queue: Queue<DeliveryJob>;
    /** Where the webhook deliveries the claim wrote get their jobs. */
    webhookQueue: Queue<DeliveryJob>;
    autoresponse: Pick<AutoresponseSettings, 'policy'>;
  };

/**
 * What one attempt at the owner's email learned, for its caller: the ids of the queued copies to
 * the key's added recipients it made, and the autoresponse outcome the claim already tells (a key
 * without an autoresponse, the usual case: its `off` rides on the `sent` write).
 */
type OwnerAttempt = { copies: string[]; autoresponse?: AutoresponseOutcome | undefined };

/**
 * The owner's email, then, once its attempt is over, the jobs of the copies to the key's added
 * recipients that the attempt made, and, once the email is sent or settled (held as spam,
 * suppressed, failed for good), the visitor's autoresponse decided and queued as a job of its own.
 * Neither delays the owner's email, nor can their failure fail it.
 */
export async function deliverSubmission(context: SubmissionContext, job: Job<DeliveryJobs['submission']>): Promise<SendOutcome> {
  const attempt: OwnerAttempt = { copies: [] };
  let outcome: SendOutcome;
  try {
    outcome = await deliverOwnerEmail(context, job, attempt);
  } catch (error) {
    await enqueueCopies(context, attempt.copies, job.data.requestId);
    if (error instanceof UnrecoverableError) await followWithAutoresponse(context, job.data.submissionId, job.data.requestId);
    throw error;
  }
  await enqueueCopies(context, attempt.copies, job.data.requestId);
  if (outcome === 'sent' && attempt.autoresponse) autoresponses.inc({ outcome: attempt.autoresponse });
  else if (outcome !== 'not-claimable') await followWithAutoresponse(context, job.data.submissionId, job.data.requestId);
  return outcome;
}

/** The copies' jobs; one not added (Redis away) leaves its copy `queued` for the reconciler. */
async function enqueueCopies(context: SubmissionContext, copyIds: string[], requestId: string | undefined): Promise<void> {
  for (const copyId of copyIds) {
    await enqueueDelivery(context.queue, recipientCopyJob(copyId, requestId)).catch((error: unknown) =>
      context.log.warn({ err: error, copyId }, 'the job of a copy to an added recipient could not be added; left for the reconciler'),
    );
  }
}

/** The jobs of the webhook deliveries the claim wrote; not added (Redis away), their rows wait for the reconciler. */
async function enqueueWebhooks(context: SubmissionContext, deliveryIds: string[], requestId: string | undefined): Promise<void> {
  await enqueueDeliveries(
    context.webhookQueue,
    deliveryIds.map((id) => webhookJob(id, requestId)),
  ).catch((error: unknown) => context.log.warn({ err: error, deliveryIds }, 'the jobs of webhook deliveries could not be added; left for the reconciler'));
}

/**
 * The copies are made once the spam check let the message through, and before the owner's email
 * goes: a worker that dies once it is sent leaves the copies' rows behind it, for the reconciler.
 * The owner's suppressed address stops its own email only, not the copies.
 */
async function deliverOwnerEmail(context: SubmissionContext, job: Job<DeliveryJobs['submission']>, attempt: OwnerAttempt): Promise<SendOutcome> {
  const { submissionId } = job.data;
  const claim = async () => {
    const claimed = await context.claimSubmission(submissionId);
    if (claimed?.newWebhookDeliveryIds.length) await enqueueWebhooks(context, claimed.newWebhookDeliveryIds, job.data.requestId);
    return claimed && { attempt: claimed.attempt, claim: claimed.claim, row: claimed.submission };
  };
  return sendTracked(context, 'submission', submissionId, job, claim, async (submission, claimToken) => {
    if (submission.keyEmail === null) throw new Error(`the key of submission ${submissionId} is gone`);
    const suppressed = submissionSuppression(submission);
    if (suppressed && !submission.hasRecipients) throw new SuppressedError(suppressed);
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
    // Before the copies are made and before anything names a file: each file scanned once (throws while the scanner is awaited).
    const files = await scanSubmissionFiles(context, context.fileScan, submission, stored);
    if (submission.hasRecipients) attempt.copies.push(...(await copySubmission(context.em, submissionId)));
    if (suppressed) throw new SuppressedError(suppressed);
    const key = { layout: submission.emailLayout, label: submission.keyLabel, subjectLabel: submission.subjectLabel };
    const { message, release } = await submissionMessage(context, submission, files, key, { kind: 'submission', id: submissionId, to: submission.keyEmail });
    attempt.autoresponse = outcomeFromKey(submission);
    return { message, release, spam, autoresponse: attempt.autoresponse };
  });
}
