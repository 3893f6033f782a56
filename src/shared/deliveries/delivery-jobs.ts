// The jobs of the delivery and webhook queues, one per delivery kind (./delivery-kinds.ts): their
// payloads carry ids only, and a worker reloads everything else from PostgreSQL.
import { deliveryKinds, type DeliveryKindName, type JobData } from './delivery-kinds.ts';

/**
 * The jobs of the delivery queue, one per delivery kind (./delivery-kinds.ts). Ids only:
 * the row to deliver, and the id of the request that created it (to follow it in logs).
 */
export type DeliveryJobs = { [N in Exclude<DeliveryKindName, 'webhook'>]: JobData<N> } & { webhook: WebhookJobData };
/**
 * A webhook job may carry the payloads of other webhook jobs enqueued with it (`batch`): the API
 * adds one job for a burst of submissions, and the worker that takes it adds the others' jobs first
 * (src/shared/webhooks/webhook-batches.ts).
 */
export type WebhookJobData = WebhookEventData & { batch?: WebhookEventData[] };
/**
 * One webhook delivery's job. From the API it also names the submission and the endpoint: for a
 * submission queued for email the row is not written yet, and the worker writes it (its id is
 * their createdEventId, src/shared/webhooks/created-event-id.ts).
 */
export type WebhookEventData = JobData<'webhook'> & { submissionId?: string; endpointId?: string };
export type DeliveryJobName = keyof DeliveryJobs;
export type DeliveryJob = DeliveryJobs[DeliveryJobName];

/** A job to add: the job id is the row's id (`rowId`), so a second add of the same row is a no-op. */
export type DeliveryRequest = { [N in DeliveryJobName]: { name: N; data: DeliveryJobs[N]; rowId: string } }[DeliveryJobName];

/** The job that delivers row `rowId` of kind `name`. */
export function deliveryJob(name: DeliveryJobName, rowId: string, requestId?: string): DeliveryRequest {
  const data = { [deliveryKinds[name].idField]: rowId, ...(requestId ? { requestId } : {}) } as DeliveryJobs[DeliveryJobName];
  return { name, data, rowId } as DeliveryRequest;
}

export const submissionJob = (submissionId: string, requestId?: string) => deliveryJob('submission', submissionId, requestId);
export const keyEmailJob = (keyEmailId: string, requestId?: string) => deliveryJob('key-email', keyEmailId, requestId);
export const autoresponseJob = (autoresponseId: string, requestId?: string) => deliveryJob('autoresponse', autoresponseId, requestId);
export const recipientCopyJob = (copyId: string, requestId?: string) => deliveryJob('recipient-copy', copyId, requestId);
export const webhookJob = (deliveryId: string, requestId?: string) => deliveryJob('webhook', deliveryId, requestId);
/** The job of a `submission.created` delivery whose row its worker writes (`delivery`: its id and its endpoint's). */
export function createdEventJob(submissionId: string, delivery: { id: string; endpointId: string }, requestId?: string): DeliveryRequest {
  const data: WebhookEventData = { deliveryId: delivery.id, submissionId, endpointId: delivery.endpointId, ...(requestId ? { requestId } : {}) };
  return { name: 'webhook', data, rowId: delivery.id };
}
