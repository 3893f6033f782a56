// The webhook events the API queued for the workers: read from the webhook queue's jobs, those a
// burst's job carries included (src/shared/webhooks/webhook-batches.ts). A job names its delivery
// row (written with the submission), or also the submission and the endpoint (a row its worker
// writes).
import type { Queue } from 'bullmq';
import type { DeliveryJob, WebhookEventData } from '../../src/shared/deliveries/delivery-jobs.ts';
import type { Harness } from './harness.ts';

/** The endpoints the jobs waiting in `queue` will tell of submission `submissionId`. */
export async function queuedEndpointsOf(db: Pick<Harness, 'sql'>, queue: Queue<DeliveryJob>, submissionId: string): Promise<string[]> {
  const jobs = await queue.getJobs(['waiting', 'prioritized', 'delayed', 'active']);
  const events = jobs.flatMap((job) => {
    const data = job.data as WebhookEventData & { batch?: WebhookEventData[] };
    return [data, ...(data.batch ?? [])];
  });
  const rows = await db.sql<{ id: string; endpoint_id: string }>('select id, endpoint_id from webhook_deliveries where submission_id = $1', [submissionId]);
  const endpointOfRow = new Map(rows.map((row) => [row.id, row.endpoint_id]));
  return events.flatMap((event) => {
    if (event.submissionId === submissionId && event.endpointId) return [event.endpointId];
    const endpoint = endpointOfRow.get(event.deliveryId);
    return endpoint ? [endpoint] : [];
  });
}
