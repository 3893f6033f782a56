// A burst of webhook deliveries as one job: a job carrying the others (ids only, in `batch`), whose
// worker adds the others' jobs before its own delivery. A job per delivery costs the API and Redis a
// BullMQ script each, on the path every submission waits for; a job per burst would move that cost
// to the workers (docs/benchmarks.md#the-owners-extras). The workers read such jobs; the API adds
// none yet, since the previous release's workers deliver only the carrier: an API may add them
// once every worker it can meet reads them (docs/upgrading.md#releases-side-by-side). A carried job
// not added (Redis away, a worker gone) is the reconciler's, like any row without a job; each job's
// id is its row's, so adding one twice is a no-op.
import type { Job, Queue } from 'bullmq';
import { enqueueDeliveries } from '../infra/queues/queues.ts';
import type { Logger } from '../infra/log.ts';
import type { DeliveryJob, DeliveryJobs } from '../deliveries/delivery-jobs.ts';

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
