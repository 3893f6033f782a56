// A burst of webhook deliveries as one job: the API's enqueue of concurrent submissions adds the
// first delivery's job carrying the others (ids only), and the worker that takes it adds the others'
// jobs before its own delivery. A job per delivery costs the API and Redis a BullMQ script each, on
// the path every submission waits for; a job per burst moves that cost to the workers
// (docs/benchmarks.md#the-owners-extras). A carried job not added (Redis away, a worker gone) is the
// reconciler's, like any row without a job; each job's id is its row's, so adding one twice is a no-op.
import type { Job, Queue } from 'bullmq';
import { enqueueDeliveries } from '../infra/queues/queues.ts';
import type { Logger } from '../infra/log.ts';
import type { DeliveryJob, DeliveryJobs, DeliveryRequest } from '../submissions/delivery-jobs.ts';

/** The webhook jobs to add for `requests`: the first carrying the rest. */
export function batchWebhookJobs(requests: DeliveryRequest[]): DeliveryRequest[] {
  const [first, ...rest] = requests;
  if (!first || rest.length === 0 || first.name !== 'webhook') return requests;
  const batch = rest.flatMap((request) => (request.name === 'webhook' ? [request.data] : []));
  if (batch.length !== rest.length) return requests;
  return [{ ...first, data: { ...first.data, batch } }];
}

/** Adds the jobs a webhook job carries, then drops them from its payload, so that its retries do not add them again. */
export async function releaseWebhookBatch(queue: Queue<DeliveryJob>, job: Job<DeliveryJobs['webhook']>, log: Logger): Promise<void> {
  const { batch, ...own } = job.data;
  if (!batch?.length) return;
  try {
    await enqueueDeliveries(
      queue,
      batch.map((data) => ({ name: 'webhook', data, rowId: data.deliveryId })),
    );
    await job.updateData(own);
  } catch (error) {
    log.warn({ err: error, carried: batch.length }, 'the webhook jobs this job carries could not all be added; left for the reconciler');
  }
}
