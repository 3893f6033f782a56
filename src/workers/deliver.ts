// The submission job: the notification email to the key's owner.
import type { Job } from 'bullmq';
import { AttachmentSchema, SubmissionSchema } from '../shared/db/entities.ts';
import type { DeliveryJobs } from '../shared/queue.ts';
import type { Storage } from '../shared/storage.ts';
import { prepareFiles } from './attachments.ts';
import { renderSubmissionEmail } from './render.ts';
import { messageIdFor, sendTracked, type SendContext, type SendOutcome } from './send.ts';

/** What the submission email needs of the configuration. */
export type SubmissionSettings = { mailFrom: string; attachMaxBytes: number; linkTtlSeconds: number };

export type SubmissionContext = SendContext & SubmissionSettings & { storage: Storage };

export async function deliverSubmission(context: SubmissionContext, job: Job<DeliveryJobs['submission']>): Promise<SendOutcome> {
  const { submissionId } = job.data;
  return sendTracked(context, 'submission', submissionId, job, async () => {
    const { em } = context;
    const submission = await em.findOneOrFail(SubmissionSchema, submissionId, { populate: ['key'] });
    const stored = await em.find(AttachmentSchema, { submission: submissionId }, { orderBy: { createdAt: 'asc' } });
    const files = await prepareFiles(stored, context.storage, {
      attachMaxBytes: context.attachMaxBytes,
      linkTtlSeconds: context.linkTtlSeconds,
    });
    const email = renderSubmissionEmail(submission, files.listed, context.linkTtlSeconds);
    return {
      message: {
        from: context.mailFrom,
        to: submission.key.email,
        replyTo: submission.email,
        subject: email.subject,
        text: email.text,
        html: email.html,
        attachments: files.attachments,
        messageId: messageIdFor('submission', submissionId, context.mailFrom),
      },
      release: files.release,
    };
  });
}
