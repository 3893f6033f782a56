// The SMTP transport: one pooled connection set per process (SMTP_URL, smtp:// or smtps://).
import nodemailer, { type Transporter } from 'nodemailer';
import type SMTPPool from 'nodemailer/lib/smtp-pool/index.js';

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
    ...(url.username
      ? { auth: { user: decodeURIComponent(url.username), pass: decodeURIComponent(url.password) } }
      : {}),
    ...(dkim ? { dkim } : {}),
  };
  return nodemailer.createTransport(options);
}
