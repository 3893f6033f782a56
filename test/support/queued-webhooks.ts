// The webhook events the API queued for the workers to write and deliver: read from the webhook
// queue's jobs, those a burst's job carries included (src/shared/webhooks/webhook-batches.ts).
import type { Queue } from 'bullmq';
import type { DeliveryJob, WebhookEventData } from '../../src/shared/submissions/delivery-jobs.ts';

/** The endpoints the jobs waiting in `queue` will tell of submission `submissionId`. */
export async function queuedEndpointsOf(queue: Queue<DeliveryJob>, submissionId: string): Promise<string[]> {
  const jobs = await queue.getJobs(['waiting', 'prioritized', 'delayed', 'active']);
  const events = jobs.flatMap((job) => {
    const data = job.data as WebhookEventData & { batch?: WebhookEventData[] };
    return [data, ...(data.batch ?? [])];
  });
  return events.flatMap((event) => (event.submissionId === submissionId && event.endpointId ? [event.endpointId] : []));
}
