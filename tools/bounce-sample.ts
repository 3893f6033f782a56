// `npm run bounce:sample -- <submission id> [--delayed | --soft | --complaint]`: mails a report for
// one of your submissions to the local bounce receiver, as a relay would (see docs/bounces.md).
// It reads the same settings as `npm start`: BOUNCE_DOMAIN, BOUNCE_SMTP_PORT, and SECRET (or the
// one `npm start` keeps in DATA_DIR/secret).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import nodemailer from 'nodemailer';
import { createReturnPaths } from '../src/shared/bounces/return-path.ts';
import { abuseReport, dsn } from './sample-reports.ts';

const [id, flag] = process.argv.slice(2);
const domain = process.env.BOUNCE_DOMAIN;
if (!id || !/^[0-9a-f-]{36}$/i.test(id) || !domain) {
  process.stderr.write('Usage: BOUNCE_DOMAIN=… [BOUNCE_SMTP_PORT=…] npm run bounce:sample -- <submission id> [--delayed | --soft | --complaint]\n');
  process.exit(2);
}
const secret = process.env.SECRET || readFileSync(path.join(path.resolve(process.env.DATA_DIR || '.data'), 'secret'), 'utf8').trim();
const returnPath = createReturnPaths(secret, domain).address('submission', id);
const message =
  flag === '--complaint'
    ? abuseReport(returnPath)
    : dsn({
        to: returnPath,
        ...(flag === '--delayed' ? { action: 'delayed' as const, status: '4.4.1', diagnostic: 'smtp; 451 4.4.1 Connection timed out' } : {}),
        ...(flag === '--soft' ? { status: '4.2.2', diagnostic: 'smtp; 452 4.2.2 Mailbox full' } : {}),
      });
const host = process.env.BOUNCE_SMTP_HOST && process.env.BOUNCE_SMTP_HOST !== '0.0.0.0' ? process.env.BOUNCE_SMTP_HOST : '127.0.0.1';
const transport = nodemailer.createTransport({ host, port: Number(process.env.BOUNCE_SMTP_PORT || 25), secure: false, ignoreTLS: true });
try {
  const sent = await transport.sendMail({ envelope: { from: '', to: returnPath }, raw: message });
  process.stdout.write(`Sent to ${returnPath}: ${sent.response}\n`);
} catch (error) {
  process.stderr.write(`The bounce receiver at ${host}:${process.env.BOUNCE_SMTP_PORT || 25} refused or could not be reached: ${(error as Error).message}\n`);
  process.exit(1);
} finally {
  transport.close();
}
