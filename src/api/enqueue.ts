// Enqueueing from a request, after its row is committed: never holds the request on a Redis outage,
// and never fails it either. A row left without a job is enqueued later by the reconciler.
// Concurrent requests share one addBulk per queue (one MULTI round trip); each waits for its own.
import type { Queue } from 'bullmq';
import { deliveryKinds } from '../shared/delivery-kinds.ts';
import { groupCommit, type GroupCommit } from '../shared/group-commit.ts';
import { enqueueDelivery, RedisUnavailableError, type DeliveryJob, type DeliveryRequest } from '../shared/queue.ts';
import { withTimeout } from '../shared/timeout.ts';
import type { AppContext, AppDeps } from './context.ts';

const TIMEOUT_MS = 2_000;
const batchers = new WeakMap<Queue<DeliveryJob>, GroupCommit<DeliveryRequest>>();

type EnqueueDeps = Pick<AppDeps, 'queue' | 'webhookQueue' | 'redis'>;

function batcherFor(queue: Queue<DeliveryJob>, redis: EnqueueDeps['redis']): GroupCommit<DeliveryRequest> {
  let batcher = batchers.get(queue);
  if (!batcher) {
    batcher = groupCommit<DeliveryRequest>(async (jobs) => {
      if (redis.status !== 'ready') throw new RedisUnavailableError(`redis is ${redis.status}`);
      // A batch of one is a plain add: addBulk builds an ioredis pipeline, whose constructor copies
      // every command and script onto it, for each call: a cost of its own when requests come one
      // at a time (npm run bench, scenario 2). The same script runs either way.
      const added: Promise<unknown> =
        jobs.length === 1
          ? enqueueDelivery(queue, jobs[0]!)
          : queue.addBulk(jobs.map((job) => ({ name: job.name, data: job.data, opts: { jobId: job.rowId } })));
      await withTimeout(added, TIMEOUT_MS, `enqueue timed out after ${TIMEOUT_MS} ms`);
    });
    batchers.set(queue, batcher);
  }
  return batcher;
}

export async function enqueueCommitted(ctx: AppContext, deps: EnqueueDeps, job: DeliveryRequest): Promise<void> {
  const queue = deliveryKinds[job.name].queue === 'webhook' ? deps.webhookQueue : deps.queue;
  await batcherFor(queue, deps.redis)(job).catch((error: unknown) =>
    ctx.state.log.warn({ err: error, job: job.name, data: job.data }, 'enqueue failed; left for the reconciler'),
  );
}
