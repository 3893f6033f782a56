// Runs each job of the webhook queue. Like the email processor, a map from job name to a handler
// typed by its payload; no SMTP breaker here: one receiver's outage is that endpoint's own.
import type { Job, Queue } from 'bullmq';
import type { MikroORM } from '../../shared/infra/db/orm.ts';
import { deliveryKinds, isDeliveryKind, type KindsIn } from '../../shared/deliveries/delivery-kinds.ts';
import type { Logger } from '../../shared/infra/log.ts';
import type { DeliveryJob, DeliveryJobs } from '../../shared/deliveries/delivery-jobs.ts';
import type { KeyVault } from '../../shared/infra/secrets.ts';
import type { Storage } from '../../shared/infra/storage.ts';
import type { SendOutcome } from '../delivery/send.ts';
import { releaseWebhookBatch } from '../../shared/webhooks/webhook-batches.ts';
import { deliverWebhook, type WebhookContext, type WebhookSettings } from './deliver-webhook.ts';
import type { SpamVerdicts } from '../spam/spam-check.ts';

type WebhookJobName = KindsIn<'webhook'>;

export type WebhookProcessorDeps = {
  orm: MikroORM;
  storage: Storage;
  vault: KeyVault;
  emailQueue: Queue<DeliveryJob>;
  /** Where the jobs a webhook job carries are added. */
  webhookQueue: Queue<DeliveryJob>;
  settings: WebhookSettings;
  /** The worker process's spam check, with a filter configured. */
  spamVerdicts: SpamVerdicts | undefined;
  log: Logger;
};

const handlers: { [N in WebhookJobName]: (context: WebhookContext, job: Job<DeliveryJobs[N]>) => Promise<SendOutcome> } = {
  webhook: deliverWebhook,
};

const isWebhookJob = (name: string): name is WebhookJobName => isDeliveryKind(name) && deliveryKinds[name].queue === 'webhook';

export function createWebhookProcessor(deps: WebhookProcessorDeps) {
  return async (job: Job<DeliveryJob>, token?: string): Promise<SendOutcome> => {
    if (!isWebhookJob(job.name)) throw new Error(`unknown job ${job.name}`);
    const log = deps.log.child({ job: job.name, jobId: job.id, requestId: job.data.requestId });
    const context: WebhookContext = {
      ...deps.settings,
      em: deps.orm.em.fork(),
      storage: deps.storage,
      vault: deps.vault,
      emailQueue: deps.emailQueue,
      log,
      token,
      spamVerdicts: deps.spamVerdicts,
    };
    const typed = job as Job<DeliveryJobs[WebhookJobName]>;
    // The others of its burst first: their deliveries do not wait for this one's receiver.
    await releaseWebhookBatch(deps.webhookQueue, typed, log);
    return handlers[job.name](context, typed);
  };
}
