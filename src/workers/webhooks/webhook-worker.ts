// The webhook jobs' BullMQ worker: a queue and a concurrency of their own, so a slow receiver never
// holds the emails; retried by the webhook delivery policy.
import type { Worker } from 'bullmq';
import type { Config } from '../../shared/infra/config.ts';
import type { Logger } from '../../shared/infra/log.ts';
import { createWebhookWorker } from '../../shared/infra/queues/workers.ts';
import { createKeyVault } from '../../shared/infra/secrets.ts';
import type { DeliveryJob } from '../../shared/deliveries/delivery-jobs.ts';
import { parseAllowList } from '../../shared/webhooks/address-guard.ts';
import { webhookRetryDelay } from '../../shared/webhooks/delivery-policy.ts';
import type { JobCounter } from '../in-flight.ts';
import type { WorkerConnections } from '../worker-connections.ts';
import { createWebhookProcessor } from './webhook-processor.ts';
import type { SpamVerdicts } from '../spam/spam-check.ts';
import { fileScanSettingsOf } from '../../shared/files/files.ts';

/** `spamVerdicts`: the process's spam check, with a filter configured (undefined: none). */
export function startWebhookWorker(
  connections: WorkerConnections,
  config: Config,
  spamVerdicts: SpamVerdicts | undefined,
  jobs: JobCounter,
  log: Logger,
): Worker<DeliveryJob> {
  const processor = createWebhookProcessor({
    orm: connections.orm,
    storage: connections.storage,
    vault: createKeyVault(config.SECRET),
    emailQueue: connections.queues.email,
    webhookQueue: connections.queues.webhook,
    settings: {
      timeoutMs: config.WEBHOOK_TIMEOUT_MS,
      retryHorizonMs: config.WEBHOOK_RETRY_HORIZON_MS,
      disableAfter: config.WEBHOOK_DISABLE_AFTER,
      claimLeaseMs: config.CLAIM_LEASE_MS,
      linkTtlSeconds: config.LINK_TTL_SECONDS,
      policy: parseAllowList(config.WEBHOOK_ALLOW),
      spamFilterOn: spamVerdicts !== undefined,
      publicUrl: config.PUBLIC_URL,
      telegramApiUrl: config.TELEGRAM_API_URL,
      fileScan: fileScanSettingsOf(config),
    },
    spamVerdicts,
    log,
  });
  const webhooks = createWebhookWorker(connections.redis, config, jobs.counted(processor), (attemptsMade, error) =>
    webhookRetryDelay(attemptsMade, error, config),
  );
  webhooks.on('error', (error) => log.warn({ err: error }, 'webhook worker error'));
  return webhooks;
}
