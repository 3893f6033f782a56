// Enqueueing from a request, after its row is committed: never holds the request on a Redis outage,
// and never fails it either. A row left without a job is enqueued later by the reconciler.
// Concurrent requests share one addBulk per queue (one pipelined round trip); each waits for its own.
// One in flight per queue: the jobs of the requests answered meanwhile go together in the next.
// One plain job per webhook delivery, never a job carrying others (`batch`): the previous
// release's workers would deliver only the carrier (docs/upgrading.md#releases-side-by-side).
import type { Queue } from 'bullmq';
import { deliveryKinds } from '../../shared/deliveries/delivery-kinds.ts';
import { groupCommit, type GroupCommit } from '../../shared/infra/group-commit.ts';
import type { JobRequest } from '../../shared/infra/queues/jobs.ts';
import { enqueueDeliveries } from '../../shared/infra/queues/queues.ts';
import { traceCarrier } from '../../shared/infra/tracing.ts';
import { RedisUnavailableError } from '../../shared/infra/queues/redis.ts';
import { type DeliveryJob, type DeliveryRequest } from '../../shared/deliveries/delivery-jobs.ts';
import { withTimeout } from '../../shared/infra/timeout.ts';
import type { AppContext, AppDeps } from '../context.ts';

const TIMEOUT_MS = 2_000;
/** The jobs of several requests go together: each carries its own request's trace context. */
type TracedRequest = DeliveryRequest & Pick<JobRequest<unknown>, 'trace'>;
const batchers = new WeakMap<Queue<DeliveryJob>, GroupCommit<TracedRequest>>();

type EnqueueDeps = Pick<AppDeps, 'queue' | 'webhookQueue' | 'redis'>;

function batcherFor(queue: Queue<DeliveryJob>, redis: EnqueueDeps['redis']): GroupCommit<TracedRequest> {
  let batcher = batchers.get(queue);
  if (!batcher) {
    batcher = groupCommit<TracedRequest>(
      async (jobs) => {
        if (redis.status !== 'ready') throw new RedisUnavailableError(`redis is ${redis.status}`);
        await withTimeout(enqueueDeliveries(queue, jobs), TIMEOUT_MS, `enqueue timed out after ${TIMEOUT_MS} ms`);
      },
      { maxInFlight: 1 },
    );
    batchers.set(queue, batcher);
  }
  return batcher;
}

export async function enqueueCommitted(ctx: AppContext, deps: EnqueueDeps, job: DeliveryRequest): Promise<void> {
  const queue = deliveryKinds[job.name].queue === 'webhook' ? deps.webhookQueue : deps.queue;
  await batcherFor(
    queue,
    deps.redis,
  )(tracedRequest(job)).catch((error: unknown) => ctx.state.log.warn({ err: error, job: job.name, data: job.data }, 'enqueue failed; left for the reconciler'));
}

function tracedRequest(job: DeliveryRequest): TracedRequest {
  const trace = traceCarrier();
  return trace === undefined ? job : { ...job, trace };
}
