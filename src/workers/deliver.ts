// The submission job: the notification email to the key's owner.
import type { Job } from 'bullmq';
import { AttachmentSchema, SubmissionSchema } from '../shared/db/entities.ts';
import type { DeliveryJobs } from '../shared/queue.ts';
import { renderSubmissionEmail } from './render.ts';
import { messageIdFor, sendTracked, type SendContext, type SendOutcome } from './send.ts';

export async function deliverSubmission(
  context: SendContext & { mailFrom: string },
  job: Job<DeliveryJobs['submission']>,
): Promise<SendOutcome> {
  const { submissionId } = job.data;
  return sendTracked(context, 'submissions', submissionId, job, async () => {
    const { em } = context;
    const submission = await em.findOneOrFail(SubmissionSchema, submissionId, { populate: ['key'] });
    const attachments = await em.find(AttachmentSchema, { submission: submissionId }, { orderBy: { createdAt: 'asc' } });
    const email = renderSubmissionEmail(submission, attachments);
    return {
      from: context.mailFrom,
      to: submission.key.email,
      replyTo: submission.email,
      subject: email.subject,
      text: email.text,
      html: email.html,
      messageId: messageIdFor('submission', submissionId, context.mailFrom),
    };
  });
}
