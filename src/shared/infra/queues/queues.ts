// The three queues (deliveries, webhooks, housekeeping) and how a delivery is added to them.
import { Queue } from 'bullmq';
import type { Config } from '../config.ts';
import { DELIVERY_QUEUE, WEBHOOK_QUEUE, HOUSEKEEPING_QUEUE, type HousekeepingJob, type JobRequest } from './jobs.ts';
import { type RedisClient } from './redis.ts';
import { inTrace, queueTelemetry } from '../tracing.ts';

type QueueConfig = Pick<Config, 'QUEUE_PREFIX'>;

/**
 * BullMQ's own attempt count never ends a delivery: the worker decides from the row's age
 * (EMAIL_RETRY_HORIZON_MS) and EMAIL_MAX_ATTEMPTS when a temporary failure becomes final, and
 * ends the job with an UnrecoverableError then. This only has to be out of reach.
 */
const UNBOUNDED_ATTEMPTS = 1_000_000;
/** The job's backoff type; the delay comes from the worker's `retryDelay` strategy. */
const BACKOFF_TYPE = 'capped-exponential';

/** The delivery queue; its jobs' payloads (`Job`) are the deliveries feature's (src/shared/deliveries/delivery-jobs.ts). */
export function createDeliveryQueue<Job>(connection: RedisClient, config: QueueConfig): Queue<Job> {
  return new Queue<Job>(DELIVERY_QUEUE, {
    connection,
    prefix: config.QUEUE_PREFIX,
    ...queueTelemetry(),
    // Nothing reads the events stream (no QueueEvents); a short one is trimmed cheaply.
    streams: { events: { maxLen: 1_000 } },
    defaultJobOptions: {
      attempts: UNBOUNDED_ATTEMPTS,
      backoff: { type: BACKOFF_TYPE },
      // A completed job is deleted at once: the row's `sent` status is the record, and the
      // reconciler only asks whether a row still has a pending job. Fewer Redis commands per email
      // (docs/benchmarks.md#scenarios-and-targets).
      removeOnComplete: true,
      // Failed jobs stay for inspection for a week.
      removeOnFail: { age: 7 * 24 * 3600 },
    },
  });
}

export function createWebhookQueue<Job>(connection: RedisClient, prefix: string): Queue<Job> {
  return new Queue<Job>(WEBHOOK_QUEUE, {
    connection,
    prefix,
    ...queueTelemetry(),
    defaultJobOptions: {
      // As for emails, the worker ends a delivery (WEBHOOK_RETRY_HORIZON_MS), not BullMQ's count.
      attempts: UNBOUNDED_ATTEMPTS,
      backoff: { type: BACKOFF_TYPE },
      removeOnComplete: { age: 3600, count: 10_000 },
      removeOnFail: { age: 7 * 24 * 3600 },
    },
  });
}

export function createHousekeepingQueue(connection: RedisClient, prefix: string): Queue<HousekeepingJob> {
  return new Queue<HousekeepingJob>(HOUSEKEEPING_QUEUE, {
    connection,
    prefix,
    defaultJobOptions: { removeOnComplete: true, removeOnFail: { age: 24 * 3600 } },
  });
}

/** Enqueues a delivery; jobId = the row's id, so a second add is a no-op. */
export async function enqueueDelivery<Job>(queue: Queue<Job>, request: JobRequest<Job>): Promise<void> {
  // The payload's type is the feature's; BullMQ cannot narrow a job name of a generic queue.
  await inTrace(request.trace, () => (queue as Queue).add(request.name, request.data, { jobId: request.rowId }));
}

/**
 * Enqueues several deliveries in one round trip (addBulk's pipeline). A single one is a plain add:
 * addBulk builds an ioredis pipeline, whose constructor copies every command and script onto it,
 * for each call, a cost of its own when requests come one at a time (docs/benchmarks.md#scenarios-and-targets).
 * The same script runs either way.
 */
export async function enqueueDeliveries<Job>(queue: Queue<Job>, requests: Array<JobRequest<Job>>): Promise<void> {
  if (requests.length === 1) return enqueueDelivery(queue, requests[0]!);
  await (queue as Queue).addBulk(
    requests.map((request) => ({
      name: request.name,
      data: request.data,
      opts: request.trace ? { jobId: request.rowId, telemetry: { metadata: request.trace } } : { jobId: request.rowId },
    })),
  );
}
