// The queues' names and their jobs' payloads: ids only; a worker reloads everything else from PostgreSQL.
import { deliveryKinds, type DeliveryKindName, type JobData } from '../../submissions/delivery-kinds.ts';

/**
 * The email deliveries (submissions and key emails). The name predates the other queues; it stays,
 * since renaming it would strand the jobs queued at an upgrade and the operators' dashboards.
 */
export const DELIVERY_QUEUE = 'deliveries';
/** Webhook deliveries: their own concurrency (WEBHOOK_CONCURRENCY) and backoff, never behind the SMTP breaker. */
export const WEBHOOK_QUEUE = 'webhooks';
/** The periodic jobs (reconciler, retention), apart from the deliveries so they never wait behind a backlog. */
export const HOUSEKEEPING_QUEUE = 'housekeeping';

/**
 * The jobs of the delivery queue, one per delivery kind (src/shared/submissions/delivery-kinds.ts). Ids only:
 * the row to deliver, and the id of the request that created it (to follow it in logs).
 */
export type DeliveryJobs = { [N in DeliveryKindName]: JobData<N> };
export type DeliveryJobName = keyof DeliveryJobs;
export type DeliveryJob = DeliveryJobs[DeliveryJobName];

/** The periodic jobs of the housekeeping queue carry nothing; their name says what to run. */
export type HousekeepingJob = Record<string, never>;

/** A job to add: the job id is the row's id (`rowId`), so a second add of the same row is a no-op. */
export type DeliveryRequest = { [N in DeliveryJobName]: { name: N; data: DeliveryJobs[N]; rowId: string } }[DeliveryJobName];

/** The job that delivers row `rowId` of kind `name`. */
export function deliveryJob(name: DeliveryJobName, rowId: string, requestId?: string): DeliveryRequest {
  const data = { [deliveryKinds[name].idField]: rowId, ...(requestId ? { requestId } : {}) } as DeliveryJobs[DeliveryJobName];
  return { name, data, rowId } as DeliveryRequest;
}

export const submissionJob = (submissionId: string, requestId?: string) => deliveryJob('submission', submissionId, requestId);
export const keyEmailJob = (keyEmailId: string, requestId?: string) => deliveryJob('key-email', keyEmailId, requestId);
export const webhookJob = (deliveryId: string, requestId?: string) => deliveryJob('webhook', deliveryId, requestId);
