// Builds a delivery worker process from a config: its connections, then its three BullMQ workers
// (emails, webhooks, the periodic jobs), each registered for an ordered shutdown. Used by
// `start:worker` and by the tests.
import { setTimeout } from 'node:timers/promises';
import type { AddressInfo } from 'node:net';
import type { Worker } from 'bullmq';
import { serveMetrics } from '../shared/infra/metrics-server.ts';
import { ConfigError, type Config } from '../shared/infra/config.ts';
import type { MikroORM } from '../shared/infra/db/orm.ts';
import type { Logger } from '../shared/infra/log.ts';
import { createHousekeepingWorker } from '../shared/infra/queues/workers.ts';
import { checkSecretAtStart } from '../shared/infra/secret-check.ts';
import { Shutdown } from '../shared/infra/shutdown.ts';
import { startTracing, withSpan } from '../shared/infra/tracing.ts';
import { spamFilterFromConfig } from '../shared/spam/spam-filter.ts';
import type { DeliveryJob } from '../shared/deliveries/delivery-jobs.ts';
import { startDeliveryWorker } from './delivery/delivery-worker.ts';
import { createHousekeepingProcessor, schedulePeriodicJobs } from './housekeeping/housekeeping.ts';
import { createJobCounter, type JobCounter } from './in-flight.ts';
import { createLiveness } from './liveness.ts';
import { waitForSpamFilter } from './spam/filter-ready.ts';
import { spamVerdictsFromConfig } from './spam/spam-check.ts';
import { startWebhookWorker } from './webhooks/webhook-worker.ts';
import { openWorkerConnections, type WorkerConnections } from './worker-connections.ts';

/** How long the job processors may take to close once no job runs (see closeJobProcessors). */
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
  // Before the queues and workers, which take BullMQ's telemetry from it; stopped last, after them.
  const tracing = await startTracing(config, 'worker', log);
  if (tracing) shutdown.add('tracing', tracing, (tracing) => tracing.stop());
  const connections = await openWorkerConnections(config, smtpUrl, shutdown, log);
  const { redis, queues } = connections;
  const schedule = () => schedulePeriodicJobs(queues.housekeeping, queues.email, config);
  await schedule();
  // No job before the spam filter answers: an email taken while rspamd still starts would go out unchecked.
  const filter = spamFilterFromConfig(config);
  if (filter && config.SPAM_FILTER_START_WAIT_MS > 0) await waitForSpamFilter(filter, config.SPAM_CHECK_TIMEOUT_MS, config.SPAM_FILTER_START_WAIT_MS, log);
  redis.on('ready', () => void schedule().catch((error: unknown) => log.warn({ err: error }, 'could not schedule the periodic jobs')));

  const jobs = createJobCounter();
  const housekeeping = startHousekeepingWorker(connections, config, jobs, log);
  // One check for both: a webhook's worker checks a submission whose email is held up.
  const spamVerdicts = withSpan('spam check', spamVerdictsFromConfig(config, filter));
  const worker = startDeliveryWorker(connections, config, filter, spamVerdicts, jobs, log);
  const webhooks = startWebhookWorker(connections, config, filter !== undefined ? spamVerdicts : undefined, jobs, log);
  const liveness = createLiveness(config.WORKER_STALL_MS, [queues.email, queues.webhook]);
  for (const processor of [worker, webhooks]) for (const event of ['active', 'completed', 'failed'] as const) processor.on(event, liveness.touch);
  // loadConfig refuses METRICS_PORT without ADMIN_TOKEN; the second test only narrows the type.
  let metricsPort: number | undefined;
  if (config.METRICS_PORT !== undefined && config.ADMIN_TOKEN !== undefined) {
    const metrics = await serveMetrics(config.HOST, config.METRICS_PORT, config.ADMIN_TOKEN, liveness.alive);
    shutdown.add('metrics', metrics, (server) => new Promise((resolve) => server.close(resolve)));
    metricsPort = (metrics.address() as AddressInfo).port;
    log.info({ port: metricsPort }, 'worker metrics listening');
  }
  // Registered last, so closed first.
  shutdown.add('job processors', [worker, webhooks, housekeeping], (processors) => closeJobProcessors(processors, jobs, config, log));
  await Promise.all([worker.waitUntilReady(), housekeeping.waitUntilReady(), webhooks.waitUntilReady()]);
  // "worker ready" is for the caller to say, once it has installed the signal handlers (main.ts).
  return { worker, orm: connections.orm, shutdown, metricsPort };
}

function startHousekeepingWorker(connections: WorkerConnections, config: Config, jobs: JobCounter, log: Logger): Worker {
  const { orm, storage, queues } = connections;
  const processor = createHousekeepingProcessor({ orm, storage, queues: { email: queues.email, webhook: queues.webhook }, config, log });
  const housekeeping = createHousekeepingWorker(connections.redis, config, jobs.counted(processor));
  housekeeping.on('error', (error) => log.warn({ err: error }, 'housekeeping worker error'));
  housekeeping.on('failed', (job, error) => log.warn({ err: error, job: job?.name, jobId: job?.id }, 'housekeeping job failed'));
  return housekeeping;
}

/**
 * All three together: each takes no new job and waits for its active ones (the process gives up
 * after SHUTDOWN_TIMEOUT_MS).
 */
async function closeJobProcessors(processors: Worker[], jobs: JobCounter, config: Config, log: Logger): Promise<void> {
  if (jobs.active > 0) {
    const seconds = Math.round(config.SHUTDOWN_TIMEOUT_MS / 1000);
    log.info({ jobs: jobs.active }, `finishing ${jobs.active} job(s) in flight before stopping, at most ${seconds} s; a second Ctrl+C (SIGINT) stops at once`);
  }
  const closed = Promise.all(processors.map((processor) => processor.close()));
  await jobs.idle();
  // With no job left, closing only says goodbye to Redis. When Redis is gone that waits for a
  // reconnection that may never come, so it gets a moment, not the whole shutdown timeout.
  await Promise.race([closed, setTimeout(FAREWELL_MS)]);
}
