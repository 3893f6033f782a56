// Enqueueing from a request, after its row is committed: never holds the request on a Redis outage,
// and never fails it either. A row left without a job is enqueued later by the reconciler.
import { deliveryKinds } from '../shared/delivery-kinds.ts';
import { enqueueDeliveryFast, type DeliveryRequest } from '../shared/queue.ts';
import type { AppContext, AppDeps } from './context.ts';

export async function enqueueCommitted(ctx: AppContext, deps: Pick<AppDeps, 'queue' | 'webhookQueue' | 'redis'>, job: DeliveryRequest): Promise<void> {
  const queue = deliveryKinds[job.name].queue === 'webhook' ? deps.webhookQueue : deps.queue;
  await enqueueDeliveryFast(queue, deps.redis, job).catch((error: unknown) =>
    ctx.state.log.warn({ err: error, job: job.name, data: job.data }, 'enqueue failed; left for the reconciler'),
  );
}
