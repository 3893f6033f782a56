// The floor of the delivery design, for the end-to-end baseline: a bare BullMQ worker on the same
// queue that loads the row (one SELECT), sends it and marks it sent (one UPDATE).

// It sends through a pooled nodemailer transport with one connection per concurrent job. No claim,
// no ORM, no attachments.
import pg from 'pg';
import { createMailTransport } from '../../src/shared/infra/mail.ts';
import { createDeliveryWorker } from '../../src/shared/infra/queues/workers.ts';
import { createRedis } from '../../src/shared/infra/queues/redis.ts';
import { type DeliveryJob, type DeliveryJobs } from '../../src/shared/deliveries/delivery-jobs.ts';
import { retryDelay } from '../../src/shared/deliveries/retry-policy.ts';
import { MAIL_FROM } from './message.ts';

const env = (name: string) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
};
const concurrency = Number(env('WORKER_CONCURRENCY'));
const pool = new pg.Pool({ connectionString: env('DATABASE_URL'), max: concurrency });
const transport = createMailTransport(env('SMTP_URL'), concurrency);
const redis = createRedis(env('REDIS_URL'), 'worker');

type Row = { email: string; subject: string; message: string; owner: string };

const worker = createDeliveryWorker<DeliveryJob>(
  redis,
  { QUEUE_PREFIX: env('QUEUE_PREFIX') },
  async (job) => {
    const { submissionId } = job.data as DeliveryJobs['submission'];
    const { rows } = await pool.query<Row>(
      `select s.email, s.subject, s.message, k.email as owner
         from submissions s join verification_keys k on k.id = s.key_id where s.id = $1`,
      [submissionId],
    );
    const row = rows[0];
    if (!row) return 'missing';
    await transport.sendMail({
      from: MAIL_FROM,
      to: row.owner,
      replyTo: row.email,
      subject: row.subject,
      text: row.message,
      html: `<!doctype html>\n<html><body>\n${row.message}\n</body></html>`,
      messageId: `<submission-${submissionId}@bench.test>`,
    });
    await pool.query(`update submissions set email_status = 'sent', sent_at = now() where id = $1`, [submissionId]);
    return 'sent';
  },
  { concurrency },
  (attemptsMade) => retryDelay(attemptsMade, { EMAIL_RETRY_BACKOFF_MS: 30_000, EMAIL_RETRY_MAX_BACKOFF_MS: 3_600_000 }),
);
worker.on('error', () => undefined);
await worker.waitUntilReady();
process.stdout.write('floor worker ready\n');
process.on('SIGTERM', () => {
  void worker.close().then(async () => {
    transport.close();
    await pool.end();
    redis.disconnect();
    process.exit(0);
  });
});
