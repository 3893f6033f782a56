// The SMTP transport: one pooled connection set per process (SMTP_URL, smtp:// or smtps://).
import nodemailer, { type Transporter } from 'nodemailer';
import type SMTPPool from 'nodemailer/lib/smtp-pool/index.js';
import type { Logger } from './log.ts';

export type MailTransport = Transporter<SMTPPool.SentMessageInfo, SMTPPool.Options>;

export type DkimConfig = { domainName: string; keySelector: string; privateKey: string };

export function createMailTransport(smtpUrl: string, maxConnections: number, dkim?: DkimConfig): MailTransport {
  const url = new URL(smtpUrl);
  const options: SMTPPool.Options = {
    pool: true,
    host: url.hostname,
    port: Number(url.port) || (url.protocol === 'smtps:' ? 465 : 587),
    secure: url.protocol === 'smtps:',
    maxConnections,
    maxMessages: Infinity,
    connectionTimeout: 10_000,
    greetingTimeout: 10_000,
    socketTimeout: 30_000,
    ...(url.username ? { auth: { user: decodeURIComponent(url.username), pass: decodeURIComponent(url.password) } } : {}),
    ...(dkim ? { dkim } : {}),
  };
  return nodemailer.createTransport(options);
}

/** SMTP_URL as the logs and `npm start` show it: the password hidden ("unset" for a process without one). */
export function relayForDisplay(smtpUrl: string | undefined): string {
  if (smtpUrl === undefined) return 'unset';
  const url = new URL(smtpUrl);
  if (url.password) url.password = '***';
  return url.toString();
}

/** What nodemailer's error codes mean to an operator, and which part of SMTP_URL to look at. */
const UNREACHABLE = new Set(['ECONNECTION', 'ETIMEDOUT', 'EDNS', 'ESOCKET']);

/**
 * Connects to the relay once, and logs in when SMTP_URL carries a user (nodemailer's verify), so
 * that a wrong password or host shows at start, not at the first email. A failure is a warning that
 * names SMTP_URL and the relay's answer, not a stop: emails wait and are retried until it accepts.
 * Resolves to whether the relay accepted.
 */
export async function checkMailRelay(transport: MailTransport, smtpUrl: string, log: Logger): Promise<boolean> {
  const shown = relayForDisplay(smtpUrl);
  const user = decodeURIComponent(new URL(smtpUrl).username);
  try {
    await transport.verify();
    log.info({ SMTP_URL: shown }, `the mail relay answered${user ? ' and accepted the login' : ''}`);
    return true;
  } catch (caught) {
    const error = caught as Error & { code?: string; response?: string };
    const answer = error.response ?? error.message;
    const [what, fix] =
      error.code === 'EAUTH' || error.code === 'ENOAUTH'
        ? [user ? `refused the login of ${JSON.stringify(user)}` : 'refused the login', 'check the user and password in SMTP_URL']
        : UNREACHABLE.has(error.code ?? '')
          ? ['cannot be reached', 'check the host, the port and smtp:// or smtps:// in SMTP_URL']
          : ['answered the check with an error', 'check SMTP_URL'];
    log.warn(
      { SMTP_URL: shown, code: error.code, answer },
      `SMTP_URL: the mail relay ${shown} ${what}: ${answer}. Emails wait and are retried until it accepts them; ${fix}.`,
    );
    return false;
  }
}
