// What a worker process opens, each registered for the ordered shutdown (closed in the reverse
// order): PostgreSQL (the jobs' pool, the `sent` recorder, the claims), the SMTP transport, S3,
// Redis and the three queues the worker takes jobs from or adds jobs to.
import { hostname } from 'node:os';
import type { Queue } from 'bullmq';
import type { HousekeepingJob } from '../shared/infra/queues/jobs.ts';
import type { Config } from '../shared/infra/config.ts';
import { createOrm, type MikroORM } from '../shared/infra/db/orm.ts';
import { configuredTimeouts } from '../shared/infra/db/pg-pool.ts';
import type { Logger } from '../shared/infra/log.ts';
import { checkMailRelay, createMailTransport, relayForDisplay, type MailTransport } from '../shared/infra/mail.ts';
import { registerBreakerState, registerQueueDepth } from '../shared/infra/metrics.ts';
import { createDeliveryQueue, createHousekeepingQueue, createWebhookQueue } from '../shared/infra/queues/queues.ts';
import { closeRedis, createRedis, type RedisClient, redisTopology } from '../shared/infra/queues/redis.ts';
import type { Shutdown } from '../shared/infra/shutdown.ts';
import { createStorage, type Storage } from '../shared/infra/storage.ts';
import { entities } from '../shared/schema.ts';
import { spamFilterFromConfig } from '../shared/spam/spam-filter.ts';
import type { DeliveryJob } from '../shared/deliveries/delivery-jobs.ts';
import { readBreaker } from '../shared/submissions/smtp-breaker-state.ts';
import { createSentRecorder, type SentRecorder } from './delivery/sent-recorder.ts';
import { createSubmissionClaimer, type SubmissionClaimer } from './delivery/submission-claims.ts';

export type WorkerQueues = { email: Queue<DeliveryJob>; housekeeping: Queue<HousekeepingJob>; webhook: Queue<DeliveryJob> };

export type WorkerConnections = {
  orm: MikroORM;
  transport: MailTransport;
  recorder: SentRecorder;
  claims: { claim: SubmissionClaimer; close: () => Promise<void> };
  storage: Storage;
  redis: RedisClient;
  queues: WorkerQueues;
  /** Names this process in the delivery history: stable while it runs, told apart from its peers. */
  workerName: string;
};

export async function openWorkerConnections(config: Config, smtpUrl: string, shutdown: Shutdown, log: Logger): Promise<WorkerConnections> {
  const orm = shutdown.add(
    'postgres',
    // A job holds a connection only for each short query, not while it talks SMTP: a few per
    // process suffice, and 50 each exhausted PostgreSQL's max_connections with four workers
    // ("too many clients", jobs retried after the backoff; docs/benchmarks.md#scenarios-and-targets).
    await createOrm(config.DATABASE_URL, entities, Math.min(config.WORKER_CONCURRENCY, 10), {
      timeouts: configuredTimeouts(config, 'worker'),
      pooler: config.DATABASE_POOLER,
    }),
    (orm) => orm.close(),
  );
  const transport = shutdown.add('smtp', openTransport(config, smtpUrl, log), (transport) => transport.close());
  const workerName = `${hostname()}:${process.pid}`;
  // `sent` is recorded on connections of its own, never queued behind the jobs' reads and claims.
  const database = { url: config.DATABASE_URL, pooler: config.DATABASE_POOLER };
  const recorder = shutdown.add('postgres (sent)', createSentRecorder(database, workerName, configuredTimeouts(config, 'worker')), (recorder) =>
    recorder.close(),
  );
  const claims = shutdown.add('postgres (claims)', createSubmissionClaimer(database, config.CLAIM_LEASE_MS, configuredTimeouts(config, 'worker')), (claims) =>
    claims.close(),
  );
  const storage = shutdown.add('storage', createStorage(config), (storage) => storage.close());
  const redis = shutdown.add('redis', createRedis(config.REDIS_URL, 'worker', redisTopology(config)), closeRedis);
  redis.on('error', (error) => log.debug({ err: error }, 'redis error'));
  const queues = openQueues(redis, config, shutdown, log);
  registerBreakerState(async () => (await readBreaker(redis, config.QUEUE_PREFIX)).state === 'open');
  return { orm, transport, recorder, claims, storage, redis, queues, workerName };
}

function openTransport(config: Config, smtpUrl: string, log: Logger): MailTransport {
  const transport = createMailTransport(
    smtpUrl,
    // One connection per concurrent job: a job waiting for a free connection holds its claim
    // and its open attachment streams while doing nothing (docs/benchmarks.md#scenarios-and-targets).
    config.WORKER_CONCURRENCY,
    config.DKIM_DOMAIN && config.DKIM_SELECTOR && config.DKIM_PRIVATE_KEY
      ? { domainName: config.DKIM_DOMAIN, keySelector: config.DKIM_SELECTOR, privateKey: config.DKIM_PRIVATE_KEY.replace(/\\n/g, '\n') }
      : undefined,
  );
  // What this worker sends with, by the settings' names, for the operator who set them.
  log.info(
    {
      SMTP_URL: relayForDisplay(config.SMTP_URL),
      MAIL_FROM: config.MAIL_FROM,
      BOUNCE_DOMAIN: config.BOUNCE_DOMAIN ?? 'off',
      SPAM_FILTER_URL: spamFilterFromConfig(config) ? config.SPAM_FILTER_URL : 'off',
    },
    'delivery settings',
  );
  // Once, in the background: an unreachable relay must not hold the start for its connection timeout.
  void checkMailRelay(transport, smtpUrl, log);
  return transport;
}

function openQueues(redis: RedisClient, config: Config, shutdown: Shutdown, log: Logger): WorkerQueues {
  const email = shutdown.add('queue', createDeliveryQueue<DeliveryJob>(redis, config), (queue) => queue.close());
  email.on('error', (error) => log.debug({ err: error }, 'queue error'));
  registerQueueDepth(email);
  const housekeeping = shutdown.add('housekeeping queue', createHousekeepingQueue(redis, config.QUEUE_PREFIX), (queue) => queue.close());
  housekeeping.on('error', (error) => log.debug({ err: error }, 'housekeeping queue error'));
  const webhook = shutdown.add('webhook queue', createWebhookQueue<DeliveryJob>(redis, config.QUEUE_PREFIX), (queue) => queue.close());
  webhook.on('error', (error) => log.debug({ err: error }, 'webhook queue error'));
  registerQueueDepth(webhook, 'cfs_webhook_queue_jobs', 'Jobs in the webhook queue by state');
  return { email, housekeeping, webhook };
}
