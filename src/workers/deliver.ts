// The delivery job: claim the submission, send its email, record the outcome in PostgreSQL.
import type { Job } from 'bullmq';
import { UnrecoverableError } from 'bullmq';
import type { MikroORM } from '../shared/db/orm.ts';
import { AttachmentSchema, SubmissionSchema } from '../shared/db/entities.ts';
import type { Logger } from '../shared/log.ts';
import type { MailTransport } from '../shared/mail.ts';
import type { DeliveryJob } from '../shared/queue.ts';
import { renderSubmissionEmail } from './render.ts';

/** A claim older than this belongs to a worker that died mid-send; the row may be claimed again. */
export const CLAIM_LEASE_MS = 5 * 60_000;

export type DeliveryDeps = {
  orm: MikroORM;
  transport: MailTransport;
  mailFrom: string;
  maxAttempts: number;
  log: Logger;
};

export type DeliveryOutcome = 'sent' | 'not-claimable';

export function createDeliveryProcessor(deps: DeliveryDeps) {
  return async (job: Job<DeliveryJob>): Promise<DeliveryOutcome> => {
    const { submissionId } = job.data;
    const em = deps.orm.em.fork();

    // Compare-and-set: only one worker moves the row to `sending`, so a job that runs twice sends once.
    const claimed = await em.execute(
      `update submissions
          set email_status = 'sending', claimed_at = now(), email_attempts = email_attempts + 1
        where id = ?
          and (email_status in ('queued', 'retrying')
               or (email_status = 'sending' and claimed_at < now() - make_interval(secs => ?)))
        returning id`,
      [submissionId, CLAIM_LEASE_MS / 1000],
    );
    if (claimed.length === 0) return 'not-claimable';

    const submission = await em.findOneOrFail(SubmissionSchema, submissionId, { populate: ['key'] });
    const attachments = await em.find(AttachmentSchema, { submission: submissionId }, { orderBy: { createdAt: 'asc' } });
    const email = renderSubmissionEmail(submission, attachments);

    try {
      const info = await deps.transport.sendMail({
        from: deps.mailFrom,
        to: submission.key.email,
        replyTo: submission.email,
        subject: email.subject,
        text: email.text,
        html: email.html,
        messageId: messageIdFor(submissionId, deps.mailFrom),
      });
      await em.nativeUpdate(
        SubmissionSchema,
        { id: submissionId },
        { emailStatus: 'sent', sentAt: new Date(), messageId: info.messageId, lastError: null },
      );
      return 'sent';
    } catch (error) {
      const reason = describeSendError(error);
      const finalAttempt =
        isPermanent(error) ||
        submission.emailAttempts >= deps.maxAttempts ||
        job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
      await em.nativeUpdate(
        SubmissionSchema,
        { id: submissionId },
        { emailStatus: finalAttempt ? 'failed' : 'retrying', lastError: reason, claimedAt: null },
      );
      deps.log.warn({ submissionId, attempt: submission.emailAttempts, finalAttempt, reason }, 'delivery failed');
      throw finalAttempt ? new UnrecoverableError(reason) : new Error(reason);
    }
  };
}

/** Derived from the submission id, so a resend of the same submission is recognisable. */
export function messageIdFor(submissionId: string, mailFrom: string): string {
  const domain = /@([^>\s]+)>?\s*$/.exec(mailFrom)?.[1] ?? 'localhost';
  return `<submission-${submissionId}@${domain}>`;
}

type SmtpError = Error & { responseCode?: number; response?: string; code?: string };

/** SMTP 5xx replies (a rejected recipient among them) will not succeed on retry. */
function isPermanent(error: unknown): boolean {
  const code = (error as SmtpError).responseCode;
  return typeof code === 'number' && code >= 500 && code < 600;
}

function describeSendError(error: unknown): string {
  const smtp = error as SmtpError;
  return (smtp.response ?? smtp.message ?? String(error)).slice(0, 2000);
}
