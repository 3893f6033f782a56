// Builds a delivery worker process from a config: ORM, pooled SMTP transport, Redis and the
// BullMQ worker, each registered for an ordered shutdown. Used by `start:worker` and by the tests.
import { spamFilterFromConfig } from '../shared/spam/spam-filter.ts';
import { createReputationCheck } from '../shared/spam/reputation.ts';
import { createSpamChecker } from './spam/spam-check.ts';
import { waitForSpamFilter } from './spam/filter-ready.ts';
import { setTimeout } from 'node:timers/promises';
import { hostname } from 'node:os';
import type { AddressInfo } from 'node:net';
import type { Worker } from 'bullmq';
import { serveMetrics } from '../shared/infra/metrics-server.ts';
import { registerBreakerState, registerQueueDepth } from '../shared/infra/metrics.ts';
import { ConfigError, type Config } from '../shared/infra/config.ts';
import { createOrm, type MikroORM } from '../shared/infra/db/orm.ts';
import { configuredTimeouts } from '../shared/infra/db/pg-pool.ts';
import type { Logger } from '../shared/infra/log.ts';
import { checkMailRelay, createMailTransport, relayForDisplay } from '../shared/infra/mail.ts';
import { createDeliveryQueue, createHousekeepingQueue, createWebhookQueue } from '../shared/infra/queues/queues.ts';
import { createDeliveryWorker, createHousekeepingWorker, createWebhookWorker } from '../shared/infra/queues/workers.ts';
import { closeRedis, createRedis } from '../shared/infra/queues/redis.ts';
import { type DeliveryJob } from '../shared/submissions/delivery-jobs.ts';
import { parseAllowList } from '../shared/webhooks/address-guard.ts';
import { createWebhookProcessor } from './webhooks/webhook-processor.ts';
import { createConsentSigner } from '../shared/keys/consent.ts';
import { createKeyVault } from '../shared/infra/secrets.ts';
import { checkSecretAtStart } from '../shared/infra/secret-check.ts';
import { createReturnPaths } from '../shared/bounces/return-path.ts';
import { readBreaker } from '../shared/submissions/smtp-breaker-state.ts';
import { flushRetries } from '../shared/submissions/retry-flush.ts';
import { retryDelay } from '../shared/submissions/retry-policy.ts';
import { webhookRetryDelay } from '../shared/webhooks/delivery-policy.ts';
import { createStorage } from '../shared/infra/storage.ts';
import { Shutdown } from '../shared/infra/shutdown.ts';
import { SmtpBreaker } from './delivery/smtp-breaker.ts';
import { createHousekeepingProcessor, schedulePeriodicJobs } from './housekeeping/housekeeping.ts';
import { createDeliveryProcessor } from './delivery/email-processor.ts';
import { createSentRecorder } from './delivery/sent-recorder.ts';
import { createSubmissionClaimer } from './delivery/submission-claims.ts';
import { createJobCounter } from './in-flight.ts';

/** How long the job processors may take to close once no job runs (see the shutdown below). */
const FAREWELL_MS = 2_000;

/** metricsPort: where /metrics and /livez listen, with METRICS_PORT set (0 takes a free one). */
export type WorkerProcess = { worker: Worker<DeliveryJob>; orm: MikroORM; shutdown: Shutdown; metricsPort?: number };

export async function startWorker(config: Config, log: Logger): Promise<WorkerProcess> {
  // The one process that sends: the others run without the relay's credentials.
  const smtpUrl = config.SMTP_URL;
  if (smtpUrl === undefined) throw new ConfigError('Invalid configuration:\n  SMTP_URL: is required by a worker, which sends the emails');
  const shutdown = new Shutdown(log);
  // First, before anything is opened: with another SECRET than the data's, nothing may start.
  const secretCheck = await checkSecretAtStart(config.DATABASE_URL, config.SECRET, log, (error) => {
    log.fatal(error.message);
    shutdown.exitWith(78);
  });
  shutdown.add('secret check', secretCheck, (check) => check.stop());
  const orm = shutdown.add(
    'postgres',
    // A job holds a connection only for each short query, not while it talks SMTP: a few per
    // process suffice, and 50 each exhausted PostgreSQL's max_connections with four workers
    // ("too many clients", jobs retried after the backoff; docs/benchmarks.md#scenarios-and-targets).
    await createOrm(config.DATABASE_URL, Math.min(config.WORKER_CONCURRENCY, 10), { timeouts: configuredTimeouts(config, 'worker') }),
    (orm) => orm.close(),
  );
  const transport = shutdown.add(
    'smtp',
    createMailTransport(
      smtpUrl,
      // One connection per concurrent job: a job waiting for a free connection holds its claim
      // and its open attachment streams while doing nothing (docs/benchmarks.md#scenarios-and-targets).
      config.WORKER_CONCURRENCY,
      config.DKIM_DOMAIN && config.DKIM_SELECTOR && config.DKIM_PRIVATE_KEY
        ? { domainName: config.DKIM_DOMAIN, keySelector: config.DKIM_SELECTOR, privateKey: config.DKIM_PRIVATE_KEY.replace(/\\n/g, '\n') }
        : undefined,
    ),
    (transport) => transport.close(),
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
  // `sent` is recorded on connections of its own, never queued behind the jobs' reads and claims.
  // Names this process in the delivery history: stable while it runs, told apart from its peers.
  const workerName = `${hostname()}:${process.pid}`;
  const recorder = shutdown.add('postgres (sent)', createSentRecorder(config.DATABASE_URL, workerName, configuredTimeouts(config, 'worker')), (recorder) =>
    recorder.close(),
  );
  const claims = shutdown.add(
    'postgres (claims)',
    createSubmissionClaimer(config.DATABASE_URL, config.CLAIM_LEASE_MS, configuredTimeouts(config, 'worker')),
    (claims) => claims.close(),
  );
  const storage = shutdown.add('storage', createStorage(config), (storage) => storage.close());
  const redis = shutdown.add('redis', createRedis(config.REDIS_URL, 'worker', config.REDIS_CLUSTER), closeRedis);
  redis.on('error', (error) => log.debug({ err: error }, 'redis error'));
  const queue = shutdown.add('queue', createDeliveryQueue<DeliveryJob>(redis, config), (queue) => queue.close());
  queue.on('error', (error) => log.debug({ err: error }, 'queue error'));
  registerQueueDepth(queue);
  registerBreakerState(async () => (await readBreaker(redis, config.QUEUE_PREFIX)).state === 'open');
  const housekeepingQueue = shutdown.add('housekeeping queue', createHousekeepingQueue(redis, config.QUEUE_PREFIX), (queue) => queue.close());
  housekeepingQueue.on('error', (error) => log.debug({ err: error }, 'housekeeping queue error'));
  const webhookQueue = shutdown.add('webhook queue', createWebhookQueue<DeliveryJob>(redis, config.QUEUE_PREFIX), (queue) => queue.close());
  webhookQueue.on('error', (error) => log.debug({ err: error }, 'webhook queue error'));
  registerQueueDepth(webhookQueue, 'cfs_webhook_queue_jobs', 'Jobs in the webhook queue by state');
  const schedule = () => schedulePeriodicJobs(housekeepingQueue, queue, config);
  await schedule();
  // No job before the spam filter answers: an email taken while rspamd still starts would go out unchecked.
  const filter = spamFilterFromConfig(config);
  if (filter && config.SPAM_FILTER_START_WAIT_MS > 0) await waitForSpamFilter(filter, config.SPAM_CHECK_TIMEOUT_MS, config.SPAM_FILTER_START_WAIT_MS, log);
  redis.on('ready', () => void schedule().catch((error: unknown) => log.warn({ err: error }, 'could not schedule the periodic jobs')));
  const jobs = createJobCounter();
  const housekeeping = createHousekeepingWorker(
    redis,
    config,
    jobs.counted(createHousekeepingProcessor({ orm, storage, queues: { email: queue, webhook: webhookQueue }, config, log })),
  );
  housekeeping.on('error', (error) => log.warn({ err: error }, 'housekeeping worker error'));
  housekeeping.on('failed', (job, error) => log.warn({ err: error, job: job?.name, jobId: job?.id }, 'housekeeping job failed'));

  const breaker = new SmtpBreaker(
    redis,
    queue,
    {
      prefix: config.QUEUE_PREFIX,
      threshold: config.SMTP_BREAKER_THRESHOLD,
      probeIntervalMs: config.SMTP_PROBE_INTERVAL_MS,
      onClose: async () => {
        const flushed = await flushRetries({ queue, redis, em: orm.em.fork() }, config.RETRY_FLUSH_PER_SECOND);
        log.info(flushed, 'retry timers flushed after the outage');
      },
    },
    log,
  );
  const processor = createDeliveryProcessor({
    orm,
    transport,
    recorder,
    claimSubmission: claims.claim,
    spamCheck: createSpamChecker({
      filter,
      timeoutMs: config.SPAM_CHECK_TIMEOUT_MS,
      inFlight: config.SPAM_CHECKS_IN_FLIGHT,
      thresholds: { normal: config.SPAM_SCORE_NORMAL, strict: config.SPAM_SCORE_STRICT },
      mailFrom: config.MAIL_FROM,
      // Part of the spam check: without a filter, nothing is checked (and the disposable list, about
      // 17 MB, is not read).
      reputation: filter
        ? createReputationCheck({
            ipZones: config.SPAM_DNSBL_ZONES,
            domainZones: config.SPAM_URIBL_ZONES,
            servers: config.SPAM_DNS_SERVERS,
            timeoutMs: config.SPAM_DNS_TIMEOUT_MS,
            disposable: config.SPAM_DISPOSABLE_EMAIL,
          })
        : undefined,
    }),
    breaker,
    storage,
    vault: createKeyVault(config.SECRET),
    consent: createConsentSigner(config.SECRET),
    queue,
    send: {
      maxAttempts: config.EMAIL_MAX_ATTEMPTS,
      retryHorizonMs: config.EMAIL_RETRY_HORIZON_MS,
      claimLeaseMs: config.CLAIM_LEASE_MS,
      backoff: config,
      worker: workerName,
      returnPaths: config.BOUNCE_DOMAIN ? createReturnPaths(config.SECRET, config.BOUNCE_DOMAIN) : undefined,
    },
    submission: { mailFrom: config.MAIL_FROM, attachMaxBytes: config.ATTACH_MAX_BYTES, linkTtlSeconds: config.LINK_TTL_SECONDS },
    keyMail: { mailFrom: config.MAIL_FROM, publicUrl: config.PUBLIC_URL, unconfirmedPerHour: config.UNCONFIRMED_EMAILS_PER_HOUR },
    log,
  });
  const worker = createDeliveryWorker(
    redis,
    config,
    jobs.counted(processor),
    {
      concurrency: config.WORKER_CONCURRENCY,
      // A job whose worker died is taken up again after this long.
      lockDuration: config.JOB_LOCK_MS,
      stalledInterval: config.JOB_LOCK_MS,
    },
    (attemptsMade) => retryDelay(attemptsMade, config),
  );
  worker.on('error', (error) => log.warn({ err: error }, 'worker error'));
  // Liveness (/livez): stuck when jobs wait and this worker has started or finished none for
  // WORKER_STALL_MS. A Redis outage is not the worker's fault: unanswered, it counts as alive.
  let lastActivity = Date.now();
  const touch = () => {
    lastActivity = Date.now();
  };
  const alive = async () => {
    if (Date.now() - lastActivity < config.WORKER_STALL_MS) return true;
    let waiting: number;
    try {
      waiting = (await queue.getJobCountByTypes('wait', 'prioritized')) + (await webhookQueue.getJobCountByTypes('wait', 'prioritized'));
    } catch {
      return true;
    }
    if (waiting === 0) touch();
    return waiting === 0;
  };
  for (const event of ['active', 'completed', 'failed'] as const) worker.on(event, touch);
  worker.on('failed', (job, error) => log.warn({ err: error, job: job?.name, jobId: job?.id }, 'job failed'));
  // loadConfig refuses METRICS_PORT without ADMIN_TOKEN; the second test only narrows the type.
  let metricsPort: number | undefined;
  if (config.METRICS_PORT !== undefined && config.ADMIN_TOKEN !== undefined) {
    const metrics = await serveMetrics(config.HOST, config.METRICS_PORT, config.ADMIN_TOKEN, alive);
    shutdown.add('metrics', metrics, (server) => new Promise((resolve) => server.close(resolve)));
    metricsPort = (metrics.address() as AddressInfo).port;
    log.info({ port: metricsPort }, 'worker metrics listening');
  }
  // Webhooks: a queue and a concurrency of their own, so a slow receiver never holds the emails.
  const webhooks = createWebhookWorker(
    redis,
    config,
    jobs.counted(
      createWebhookProcessor({
        orm,
        storage,
        vault: createKeyVault(config.SECRET),
        emailQueue: queue,
        settings: {
          timeoutMs: config.WEBHOOK_TIMEOUT_MS,
          retryHorizonMs: config.WEBHOOK_RETRY_HORIZON_MS,
          disableAfter: config.WEBHOOK_DISABLE_AFTER,
          claimLeaseMs: config.CLAIM_LEASE_MS,
          linkTtlSeconds: config.LINK_TTL_SECONDS,
          policy: parseAllowList(config.WEBHOOK_ALLOW),
          spamFilterOn: spamFilterFromConfig(config) !== undefined,
        },
        log,
      }),
    ),
    (attemptsMade, error) => webhookRetryDelay(attemptsMade, error, config),
  );
  for (const event of ['active', 'completed', 'failed'] as const) webhooks.on(event, touch);
  // Registered last, so closed first, all three together: each takes no new job and waits for
  // its active ones (the process gives up after SHUTDOWN_TIMEOUT_MS).
  shutdown.add('job processors', [worker, webhooks, housekeeping], async (processors) => {
    if (jobs.active > 0) {
      const seconds = Math.round(config.SHUTDOWN_TIMEOUT_MS / 1000);
      log.info(
        { jobs: jobs.active },
        `finishing ${jobs.active} job(s) in flight before stopping, at most ${seconds} s; a second Ctrl+C (SIGINT) stops at once`,
      );
    }
    const closed = Promise.all(processors.map((processor) => processor.close()));
    await jobs.idle();
    // With no job left, closing only says goodbye to Redis. When Redis is gone that waits for a
    // reconnection that may never come, so it gets a moment, not the whole shutdown timeout.
    await Promise.race([closed, setTimeout(FAREWELL_MS)]);
  });
  webhooks.on('error', (error) => log.warn({ err: error }, 'webhook worker error'));
  worker.on('completed', (job, outcome) => log.debug({ job: job.name, id: job.id, outcome }, 'job done'));
  await Promise.all([worker.waitUntilReady(), housekeeping.waitUntilReady(), webhooks.waitUntilReady()]);
  // "worker ready" is for the caller to say, once it has installed the signal handlers (main.ts).
  return { worker, orm, shutdown, metricsPort };
}
