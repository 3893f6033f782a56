// Sending the email of one row (a submission or a key email) exactly once in the ordinary case:
// claim the row, send, record the outcome. Both tables share the delivery columns.
import { UnrecoverableError, type Job } from 'bullmq';
import type { EntityManager } from '@mikro-orm/postgresql';
import type Mail from 'nodemailer/lib/mailer/index.js';
import type { Logger } from '../shared/log.ts';
import { deliveries, deliveryLatency, deliveryRetries } from '../shared/metrics.ts';
import type { MailTransport } from '../shared/mail.ts';

export type DeliveryTable = 'submissions' | 'key_emails';
export type SendOutcome = 'sent' | 'not-claimable';

export type SendContext = {
  em: EntityManager;
  /** A claim older than this belongs to a worker that died mid-send; the row may be claimed again. */
  claimLeaseMs: number;
  transport: MailTransport;
  maxAttempts: number;
  log: Logger;
};

export async function sendTracked(
  context: SendContext,
  table: DeliveryTable,
  id: string,
  job: Job,
  buildMessage: () => Promise<{ message: Mail.Options; release?: () => void }>,
): Promise<SendOutcome> {
  const { em } = context;
  // Compare-and-set: only one worker moves the row to `sending`, so a job that runs twice sends once.
  // A `failed` row is claimable too: its job only runs again when an operator retries it on the
  // queue dashboard (nothing was sent for it, so nothing is sent twice).
  const claimed = await em.execute<Array<{ email_attempts: number }>>(
    `update ${table}
        set email_status = 'sending', claimed_at = now(), email_attempts = email_attempts + 1
      where id = ?
        and (email_status in ('queued', 'retrying', 'failed')
             or (email_status = 'sending' and claimed_at < now() - make_interval(secs => ?)))
      returning email_attempts`,
    [id, context.claimLeaseMs / 1000],
  );
  const attempt = claimed[0]?.email_attempts;
  if (attempt === undefined) {
    deliveries.inc({ kind: table, outcome: 'not-claimable' });
    return 'not-claimable';
  }

  let release: (() => void) | undefined;
  try {
    const built = await buildMessage();
    release = built.release;
    const info = await context.transport.sendMail(built.message);
    const [sent] = await em.execute<Array<{ created_at: Date; sent_at: Date }>>(
      `update ${table} set email_status = 'sent', sent_at = now(), message_id = ?, last_error = null where id = ?
       returning created_at, sent_at`,
      [info.messageId, id],
    );
    deliveries.inc({ kind: table, outcome: 'sent' });
    if (sent) deliveryLatency.observe({ kind: table }, (new Date(sent.sent_at).getTime() - new Date(sent.created_at).getTime()) / 1000);
    return 'sent';
  } catch (error) {
    const reason = describeSendError(error);
    const finalAttempt =
      isPermanent(error) || attempt >= context.maxAttempts || job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
    await em.execute(`update ${table} set email_status = ?, last_error = ?, claimed_at = null where id = ?`, [
      finalAttempt ? 'failed' : 'retrying',
      reason,
      id,
    ]);
    deliveries.inc({ kind: table, outcome: finalAttempt ? 'failed' : 'retry' });
    if (!finalAttempt) deliveryRetries.inc({ kind: table });
    context.log.warn({ table, id, attempt, finalAttempt, reason }, 'delivery failed');
    throw finalAttempt ? new UnrecoverableError(reason) : new Error(reason);
  } finally {
    release?.();
  }
}

/** Derived from the row's id, so a resend of the same email is recognisable. */
export function messageIdFor(kind: string, id: string, mailFrom: string): string {
  const domain = /@([^>\s]+)>?\s*$/.exec(mailFrom)?.[1] ?? 'localhost';
  return `<${kind}-${id}@${domain}>`;
}

type SmtpError = Error & { responseCode?: number; response?: string };

/** SMTP 5xx replies (a rejected recipient among them) will not succeed on retry. */
function isPermanent(error: unknown): boolean {
  const code = (error as SmtpError).responseCode;
  return typeof code === 'number' && code >= 500 && code < 600;
}

function describeSendError(error: unknown): string {
  const smtp = error as SmtpError;
  return (smtp.response ?? smtp.message ?? String(error)).slice(0, 2000);
}
