// When a failed email is tried again, after how long, and when it is given up: the rules the
// worker applies to each failed attempt (src/workers/delivery/send.ts), without I/O. Whether the row's age
// or attempt count ends it is decided where the failure is recorded (src/shared/deliveries/data/delivery-rows.ts
// recordFailure): this says whether the failure is final whatever the row's age.
import type { Config } from '../infra/config.ts';

export type RetryBackoff = Pick<Config, 'EMAIL_RETRY_BACKOFF_MS' | 'EMAIL_RETRY_MAX_BACKOFF_MS'>;

/**
 * The delay before retry number `attemptsMade`: EMAIL_RETRY_BACKOFF_MS doubling per attempt up to
 * EMAIL_RETRY_MAX_BACKOFF_MS, never beyond; the jitter (between half of that and all of it) only shortens it, so a
 * burst of failures does not retry in lockstep. `random`: a number in [0, 1), Math.random's by default.
 */
export function retryDelay(attemptsMade: number, config: RetryBackoff, random: () => number = Math.random): number {
  const exponent = Math.min(Math.max(attemptsMade - 1, 0), 40);
  const ceiling = Math.min(config.EMAIL_RETRY_BACKOFF_MS * 2 ** exponent, config.EMAIL_RETRY_MAX_BACKOFF_MS);
  return Math.floor(ceiling * (0.5 + random() * 0.5));
}

/** What nodemailer's errors carry of the SMTP conversation; what was thrown may be no Error and have no message. */
type SmtpError = { message?: string; responseCode?: number; response?: string; command?: string; code?: string };

/**
 * A 5xx is final only when it is about this message: its recipient (RCPT TO), its content (DATA),
 * or its size (552 to MAIL FROM, RFC 1870). A 5xx earlier in the conversation (the greeting, EHLO,
 * AUTH, or MAIL FROM refusing our own MAIL_FROM) is about the server or our account with it, a
 * wrong password or a relay not yet allowed to send as MAIL_FROM: every message would get it. That
 * is retried like an outage, counted by the circuit breaker, and fixed within the retry horizon it
 * costs no mail.
 */
export function isPermanentSmtpFailure(error: unknown): boolean {
  const { responseCode: code, command } = error as SmtpError;
  if (typeof code !== 'number' || code < 500 || code >= 600) return false;
  return command === 'RCPT TO' || command === 'DATA' || (command === 'MAIL FROM' && code === 552);
}

/** nodemailer's codes for a server that cannot be reached or talked to (not, say, an attachment stream that broke). */
const SERVER_CODES = new Set(['ECONNECTION', 'ETIMEDOUT', 'ESOCKET', 'EDNS', 'ETLS', 'EPROTOCOL']);

/** The SMTP server refused (a reply code) or could not be reached: what the circuit breaker counts. */
export function isSmtpServerFailure(error: unknown): boolean {
  const smtp = error as SmtpError;
  return typeof smtp.responseCode === 'number' || SERVER_CODES.has(smtp.code ?? '');
}

/** The reason kept on the row and in its history: the server's reply, else the error's message. */
export function describeSendError(error: unknown): string {
  const smtp = error as SmtpError;
  return (smtp.response ?? smtp.message ?? String(error)).slice(0, 2000);
}

/**
 * Whether a failure ends the delivery whatever the row's age: a permanent one, or the job's last
 * attempt (BullMQ's count; the queues set it out of reach, so in practice the horizon decides).
 */
export function isFinalFailure(permanent: boolean, job: { attemptsMade: number; opts: { attempts?: number | undefined } }): boolean {
  return permanent || job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
}
