// The email jobs' BullMQ worker: the SMTP breaker, the delivery processor with everything it
// sends with, and the retry delays of the email policy.
import type { Worker } from 'bullmq';
import { createReturnPaths } from '../../shared/bounces/return-path.ts';
import type { Config } from '../../shared/infra/config.ts';
import type { Logger } from '../../shared/infra/log.ts';
import { createDeliveryWorker } from '../../shared/infra/queues/workers.ts';
import { createKeyVault } from '../../shared/infra/secrets.ts';
import { autoresponsePolicyOf } from '../../shared/autoresponses/autoresponses.ts';
import { createConsentSigner } from '../../shared/keys/consent.ts';
import type { SpamFilter } from '../../shared/spam/spam-filter.ts';
import type { DeliveryJob } from '../../shared/deliveries/delivery-jobs.ts';
import { flushRetries } from '../../shared/deliveries/retry-flush.ts';
import { retryDelay } from '../../shared/deliveries/retry-policy.ts';
import type { JobCounter } from '../in-flight.ts';
import { createSpamChecker, type SpamVerdicts } from '../spam/spam-check.ts';
import type { WorkerConnections } from '../worker-connections.ts';
import { createAutoresponseTextVerdicts } from './autoresponse-text-verdicts.ts';
import { createDeliveryProcessor } from './email-processor.ts';
import { HELD_WORKER_RECHECK_MS, SmtpBreaker } from './smtp-breaker.ts';
import { fileScanSettingsOf } from '../../shared/files/files.ts';

export function startDeliveryWorker(
  connections: WorkerConnections,
  config: Config,
  filter: SpamFilter | undefined,
  spamVerdicts: SpamVerdicts,
  jobs: JobCounter,
  log: Logger,
): Worker<DeliveryJob> {
  const { orm, redis, queues } = connections;
  const queue = queues.email;
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
    transport: connections.transport,
    recorder: connections.recorder,
    claimSubmission: connections.claims.claim,
    spamCheck: createSpamChecker(spamVerdicts),
    breaker,
    storage: connections.storage,
    vault: createKeyVault(config.SECRET),
    consent: createConsentSigner(config.SECRET),
    queue,
    webhookQueue: queues.webhook,
    send: {
      maxAttempts: config.EMAIL_MAX_ATTEMPTS,
      retryHorizonMs: config.EMAIL_RETRY_HORIZON_MS,
      claimLeaseMs: config.CLAIM_LEASE_MS,
      backoff: config,
      worker: connections.workerName,
      returnPaths: config.BOUNCE_DOMAIN ? createReturnPaths(config.SECRET, config.BOUNCE_DOMAIN) : undefined,
    },
    submission: {
      mailFrom: config.MAIL_FROM,
      attachMaxBytes: config.ATTACH_MAX_BYTES,
      linkTtlSeconds: config.LINK_TTL_SECONDS,
      fileScan: fileScanSettingsOf(config),
    },
    keyMail: { mailFrom: config.MAIL_FROM, publicUrl: config.PUBLIC_URL, unconfirmedPerHour: config.UNCONFIRMED_EMAILS_PER_HOUR },
    autoresponse: {
      policy: autoresponsePolicyOf(config),
      textVerdicts: createAutoresponseTextVerdicts(filter, {
        mailFrom: config.MAIL_FROM,
        threshold: config.SPAM_SCORE_NORMAL,
        timeoutMs: config.SPAM_CHECK_TIMEOUT_MS,
      }),
    },
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
      // Resumes within this long once the breaker closes, whoever closed it.
      maximumRateLimitDelay: HELD_WORKER_RECHECK_MS,
    },
    (attemptsMade) => retryDelay(attemptsMade, config),
  );
  worker.on('error', (error) => log.warn({ err: error }, 'worker error'));
  worker.on('failed', (job, error) => log.warn({ err: error, job: job?.name, jobId: job?.id }, 'job failed'));
  worker.on('completed', (job, outcome) => log.debug({ job: job.name, id: job.id, outcome }, 'job done'));
  return worker;
}
