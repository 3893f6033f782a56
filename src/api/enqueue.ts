// Enqueueing from a request, after its row is committed: never holds the request on a Redis outage,
// and never fails it either. A row left without a job is enqueued later by the reconciler.
// Concurrent requests share one addBulk (one MULTI round trip); each waits for its own.
import type { Queue } from 'bullmq';
import { groupCommit, type GroupCommit } from '../shared/group-commit.ts';
import { jobIdOf, RedisUnavailableError, type DeliveryJob, type DeliveryRequest } from '../shared/queue.ts';
import { withTimeout } from '../shared/timeout.ts';
import type { AppContext, AppDeps } from './context.ts';

const TIMEOUT_MS = 2_000;
const batchers = new WeakMap<Queue<DeliveryJob>, GroupCommit<DeliveryRequest>>();

function batcherFor(deps: Pick<AppDeps, 'queue' | 'redis'>): GroupCommit<DeliveryRequest> {
  let batcher = batchers.get(deps.queue);
  if (!batcher) {
    batcher = groupCommit<DeliveryRequest>(async (jobs) => {
      if (deps.redis.status !== 'ready') throw new RedisUnavailableError(`redis is ${deps.redis.status}`);
      const bulk = jobs.map((job) => ({ name: job.name, data: job.data, opts: { jobId: jobIdOf(job) } }));
      await withTimeout(deps.queue.addBulk(bulk), TIMEOUT_MS, `enqueue timed out after ${TIMEOUT_MS} ms`);
    });
    batchers.set(deps.queue, batcher);
  }
  return batcher;
}

export async function enqueueCommitted(ctx: AppContext, deps: Pick<AppDeps, 'queue' | 'redis'>, job: DeliveryRequest): Promise<void> {
  await batcherFor(deps)(job).catch((error: unknown) =>
    ctx.state.log.warn({ err: error, job: job.name, data: job.data }, 'enqueue failed; left for the reconciler'),
  );
}
