// Builds a delivery worker process from a config: ORM, pooled SMTP transport, Redis and the
// BullMQ worker, each registered for an ordered shutdown. Used by `start:worker` and by the tests.
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Worker } from 'bullmq';
import { registerQueueDepth, registry } from '../shared/metrics.ts';
import type { Config } from '../shared/config.ts';
import { createOrm, type MikroORM } from '../shared/db/orm.ts';
import type { Logger } from '../shared/log.ts';
import { createMailTransport } from '../shared/mail.ts';
import { createDeliveryQueue, createDeliveryWorker, createRedis, type DeliveryJob } from '../shared/queue.ts';
import { createConsentSigner } from '../shared/consent.ts';
import { createKeyVault } from '../shared/secrets.ts';
import { createStorage } from '../shared/storage.ts';
import { Shutdown } from '../shared/shutdown.ts';
import { createDeliveryProcessor } from './processor.ts';
import { RECONCILE_SCHEDULER_ID } from './reconcile.ts';
import { RETENTION_SCHEDULER_ID } from './retention.ts';

export type WorkerProcess = { worker: Worker<DeliveryJob>; orm: MikroORM; shutdown: Shutdown };

/** GET /metrics of this worker process, for Prometheus. */
async function serveMetrics(host: string, port: number): Promise<Server> {
  const server = createServer((req, res) => {
    if (req.url !== '/metrics') {
      res.writeHead(404).end();
      return;
    }
    registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
      () => res.writeHead(500).end(),
    );
  });
  server.listen(port, host);
  await once(server, 'listening');
  return server;
}

export async function startWorker(config: Config, log: Logger): Promise<WorkerProcess> {
  const shutdown = new Shutdown(log);
  const orm = shutdown.add(
    'postgres',
    // A job holds a connection only for each short query, not while it talks SMTP: a few per
    // process suffice, and 50 each exhausted PostgreSQL's max_connections with four workers
    // ("too many clients", jobs retried after the backoff; npm run bench, scenario 3).
    await createOrm(config.DATABASE_URL, Math.min(config.WORKER_CONCURRENCY, 10)),
    (orm) => orm.close(),
  );
  const transport = shutdown.add(
    'smtp',
    createMailTransport(
      config.SMTP_URL,
      // One connection per concurrent job: a job waiting for a free connection holds its claim
      // and its open attachment streams while doing nothing (npm run bench, scenario 3).
      config.WORKER_CONCURRENCY,
      config.DKIM_DOMAIN && config.DKIM_SELECTOR && config.DKIM_PRIVATE_KEY
        ? { domainName: config.DKIM_DOMAIN, keySelector: config.DKIM_SELECTOR, privateKey: config.DKIM_PRIVATE_KEY.replace(/\\n/g, '\n') }
        : undefined,
    ),
    (transport) => transport.close(),
  );
  const storage = shutdown.add('storage', createStorage(config), (storage) => storage.close());
  const redis = shutdown.add('redis', createRedis(config.REDIS_URL, 'worker', config.REDIS_CLUSTER), (redis) => redis.quit());
  redis.on('error', (error) => log.debug({ err: error }, 'redis error'));
  const queue = shutdown.add('queue', createDeliveryQueue(redis, config), (queue) => queue.close());
  queue.on('error', (error) => log.debug({ err: error }, 'queue error'));
  registerQueueDepth(queue);
  // Upserting the same scheduler id from every worker keeps exactly one schedule for the fleet;
  // upserting again after a reconnect restores it if Redis lost its data.
  const housekeeping = { removeOnComplete: true, removeOnFail: { age: 24 * 3600 } };
  const schedule = async () => {
    await queue.upsertJobScheduler(RECONCILE_SCHEDULER_ID, { every: config.RECONCILE_INTERVAL_MS }, { name: 'reconcile', data: {}, opts: housekeeping });
    // Always: held and unconfirmed submissions expire even without RETENTION_DAYS.
    await queue.upsertJobScheduler(RETENTION_SCHEDULER_ID, { every: config.RETENTION_INTERVAL_MS }, { name: 'retention', data: {}, opts: housekeeping });
  };
  await schedule();
  redis.on('ready', () => void schedule().catch((error: unknown) => log.warn({ err: error }, 'could not schedule the periodic jobs')));

  const processor = createDeliveryProcessor({
    orm,
    transport,
    storage,
    vault: createKeyVault(config.SECRET),
    consent: createConsentSigner(config.SECRET),
    unconfirmedPerHour: config.UNCONFIRMED_EMAILS_PER_HOUR,
    queue,
    mailFrom: config.MAIL_FROM,
    publicUrl: config.PUBLIC_URL,
    maxAttempts: config.EMAIL_MAX_ATTEMPTS,
    attachMaxBytes: config.ATTACH_MAX_BYTES,
    linkTtlSeconds: config.LINK_TTL_SECONDS,
    reconcileAfterMs: config.RECONCILE_AFTER_MS,
    claimLeaseMs: config.CLAIM_LEASE_MS,
    retention: {
      retentionDays: config.RETENTION_DAYS,
      heldTtlDays: config.HELD_TTL_DAYS,
      unconfirmedSkippedTtlDays: config.UNCONFIRMED_SKIPPED_TTL_DAYS,
    },
    log,
  });
  // Registered last, so closed first: it takes no new job and waits for the active ones.
  const worker = shutdown.add(
    'worker',
    createDeliveryWorker(redis, config.QUEUE_PREFIX, processor, {
      concurrency: config.WORKER_CONCURRENCY,
      // A job whose worker died is taken up again after this long.
      lockDuration: config.JOB_LOCK_MS,
      stalledInterval: config.JOB_LOCK_MS,
    }),
    (worker) => worker.close(),
  );
  worker.on('error', (error) => log.warn({ err: error }, 'worker error'));
  worker.on('failed', (job, error) => log.warn({ err: error, job: job?.name, jobId: job?.id }, 'job failed'));
  if (config.METRICS_PORT !== undefined) {
    const metrics = await serveMetrics(config.HOST, config.METRICS_PORT);
    shutdown.add('metrics', metrics, (server) => new Promise((resolve) => server.close(resolve)));
    log.info({ port: (metrics.address() as AddressInfo).port }, 'worker metrics listening');
  }
  worker.on('completed', (job, outcome) => log.debug({ job: job.name, id: job.id, outcome }, 'job done'));
  await worker.waitUntilReady();
  log.info({ concurrency: config.WORKER_CONCURRENCY }, 'worker ready');
  return { worker, orm, shutdown };
}
