// The floor of the whole pipeline's delivery (scenario 12): a bare BullMQ worker on the floor API's
// queue that loads the row from the primary-key-only table (one SELECT), sends it over a pooled
// nodemailer transport and marks it sent (one UPDATE of sent_at). No claim, no history, no ORM.

// The message's text and HTML are the service's own rendering of a benchmark submission, made once
// at start: the bytes on the wire match the service's, the per-email work is only the floor's.
import pg from 'pg';
import { createMailTransport } from '../../src/shared/infra/mail.ts';
import { createDeliveryWorker } from '../../src/shared/infra/queues/workers.ts';
import { createRedis } from '../../src/shared/infra/queues/redis.ts';
import { type DeliveryJob, type DeliveryJobs } from '../../src/shared/deliveries/delivery-jobs.ts';
import { retryDelay } from '../../src/shared/deliveries/retry-policy.ts';
import { MAIL_FROM, sampleEmail } from './message.ts';

const env = (name: string) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
};
const concurrency = Number(env('WORKER_CONCURRENCY'));
const table = env('FLOOR_PK_TABLE');
// As many connections as the service's job pool (min(WORKER_CONCURRENCY, 10)): each query is short.
const pool = new pg.Pool({ connectionString: env('DATABASE_URL'), max: Math.min(concurrency, 10) });
const transport = createMailTransport(env('SMTP_URL'), concurrency);
const redis = createRedis(env('REDIS_URL'), 'worker');
const email = sampleEmail();

const SELECT = `select s.email, s.subject, k.email as owner from ${table} s join verification_keys k on k.id = s.key_id where s.id = $1`;
const UPDATE = `update ${table} set email_status = 'sent', sent_at = now() where id = $1`;

const worker = createDeliveryWorker<DeliveryJob>(
  redis,
  { QUEUE_PREFIX: env('QUEUE_PREFIX') },
  async (job) => {
    const { submissionId } = job.data as DeliveryJobs['submission'];
    const { rows } = await pool.query<{ email: string; subject: string; owner: string }>(SELECT, [submissionId]);
    const row = rows[0];
    if (!row) return 'missing';
    await transport.sendMail({
      from: MAIL_FROM,
      to: row.owner,
      replyTo: row.email,
      subject: row.subject,
      text: email.text,
      html: email.html,
      messageId: `<submission-${submissionId}@bench.test>`,
    });
    await pool.query(UPDATE, [submissionId]);
    return 'sent';
  },
  { concurrency },
  (attemptsMade) => retryDelay(attemptsMade, { EMAIL_RETRY_BACKOFF_MS: 30_000, EMAIL_RETRY_MAX_BACKOFF_MS: 3_600_000 }),
);
worker.on('error', () => undefined);
await worker.waitUntilReady();
process.stdout.write('floor pipeline worker ready\n');
process.on('SIGTERM', () => {
  void worker.close().then(async () => {
    transport.close();
    await pool.end();
    redis.disconnect();
    process.exit(0);
  });
});
