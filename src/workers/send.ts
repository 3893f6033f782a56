// Sending the email of one row (a submission or a key email) exactly once in the ordinary case:
// claim the row, send, record the outcome. Both tables share the delivery columns.
import { UnrecoverableError, type Job } from 'bullmq';
import type { EntityManager } from '@mikro-orm/postgresql';
import type Mail from 'nodemailer/lib/mailer/index.js';
import type { Logger } from '../shared/log.ts';
import { deliveries, deliveryLatency, deliveryRetries } from '../shared/metrics.ts';
import type { MailTransport } from '../shared/mail.ts';
import type { SentRecorder } from './sent-recorder.ts';
import { CLAIMABLE, IN_FLIGHT, sqlList } from './statuses.ts';

export type DeliveryTable = 'submissions' | 'key_emails';
export type SendOutcome = 'sent' | 'not-claimable';

export type SendContext = {
  em: EntityManager;
  /** A claim older than this belongs to a worker that died mid-send; the row may be claimed again. */
  claimLeaseMs: number;
  transport: MailTransport;
  recorder: SentRecorder;
  /** Unset: no limit; the horizon alone ends the retries. */
  maxAttempts: number | undefined;
  /** A temporary failure of a row older than this makes it `failed`. */
  retryHorizonMs: number;
  log: Logger;
};

/** A failure that will be retried. `smtp`: the SMTP server refused or could not be reached (not storage, not the database). */
export class TemporaryDeliveryError extends Error {
  override name = 'TemporaryDeliveryError';
  readonly smtp: boolean;
  constructor(reason: string, smtp: boolean) {
    super(reason);
    this.smtp = smtp;
  }
}

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
        and (email_status in (${sqlList(CLAIMABLE)})
             or (email_status = '${IN_FLIGHT}' and claimed_at < now() - make_interval(secs => ?)))
      returning email_attempts`,
    [id, context.claimLeaseMs / 1000],
  );
  const attempt = claimed[0]?.email_attempts;
  if (attempt === undefined) {
    deliveries.inc({ kind: table, outcome: 'not-claimable' });
    return 'not-claimable';
  }

  let release: (() => void) | undefined;
  let messageId: string;
  try {
    const built = await buildMessage();
    release = built.release;
    messageId = (await context.transport.sendMail(built.message)).messageId;
  } catch (error) {
    const reason = describeSendError(error);
    const [row] = await em.execute<Array<{ email_status: 'failed' | 'retrying' }>>(
      `update ${table}
          set email_status = case when ? or created_at < now() - make_interval(secs => ?) or email_attempts >= ? then 'failed' else 'retrying' end,
              last_error = ?, claimed_at = null
        where id = ?
        returning email_status`,
      [
        isPermanent(error) || job.attemptsMade + 1 >= (job.opts.attempts ?? 1),
        context.retryHorizonMs / 1000,
        context.maxAttempts ?? 2 ** 31 - 1,
        reason,
        id,
      ],
    );
    const finalAttempt = row?.email_status !== 'retrying';
    deliveries.inc({ kind: table, outcome: finalAttempt ? 'failed' : 'retry' });
    if (!finalAttempt) deliveryRetries.inc({ kind: table });
    context.log.warn({ table, id, attempt, finalAttempt, reason }, 'delivery failed');
    throw finalAttempt ? new UnrecoverableError(reason) : new TemporaryDeliveryError(reason, isServerSide(error));
  } finally {
    release?.();
  }
  // Accepted by the SMTP server: from here the row must never become `retrying`. Should this write
  // fail, the row stays `sending` and is sent again only after CLAIM_LEASE_MS, as after a crash.
  const sent = await context.recorder.markSent(table, id, messageId, performance.now());
  deliveries.inc({ kind: table, outcome: 'sent' });
  if (sent) deliveryLatency.observe({ kind: table }, (new Date(sent.sent_at).getTime() - new Date(sent.created_at).getTime()) / 1000);
  return 'sent';
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

/** nodemailer's codes for a server that cannot be reached or talked to (not, say, an attachment stream that broke). */
const SERVER_CODES = new Set(['ECONNECTION', 'ETIMEDOUT', 'ESOCKET', 'EDNS', 'ETLS', 'EPROTOCOL']);

/** The SMTP server refused (a reply code) or could not be reached: what the circuit breaker counts. */
function isServerSide(error: unknown): boolean {
  const smtp = error as SmtpError & { code?: string };
  return typeof smtp.responseCode === 'number' || SERVER_CODES.has(smtp.code ?? '');
}

function describeSendError(error: unknown): string {
  const smtp = error as SmtpError;
  return (smtp.response ?? smtp.message ?? String(error)).slice(0, 2000);
}
