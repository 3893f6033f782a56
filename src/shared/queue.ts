// Queue names, job payloads and the factories for Redis connections, queues and workers.
// A job carries ids only; the worker reloads everything else from PostgreSQL.
import { Queue, Worker, type BackoffStrategy, type Processor, type WorkerOptions } from 'bullmq';
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import type { Config } from './config.ts';
import { deliveryKinds, type DeliveryKindName, type JobData } from './delivery-kinds.ts';
import { retryDelay } from './submissions/retry-policy.ts';
import { webhookRetryDelay } from './webhooks/delivery-policy.ts';

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
 * The jobs of the delivery queue, one per delivery kind (src/shared/delivery-kinds.ts). Ids only:
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

/** A single Redis server or a Redis Cluster (REDIS_CLUSTER=true, REDIS_URL naming one node). */
export type RedisClient = Redis | Cluster;

/**
 * How long a Redis connection may leave a command unanswered before it is taken for dead, closed and
 * made again. Behind a partition a connection hangs instead of failing, and TCP alone would keep it
 * for minutes. The API's commands take milliseconds: 5 s. A worker's longest wait is BullMQ's
 * blocking pop for the next job (at most 10 s): 30 s.
 */
export const REDIS_SOCKET_TIMEOUT_MS = { producer: 5_000, worker: 30_000 } as const;

/**
 * TCP keepalive: a connection silent for 10 s is probed every second, ten times (Node's interval and
 * count), so one whose server is gone fails within about 20 s, also while idle.
 */
const REDIS_KEEPALIVE_MS = 10_000;

/**
 * The API fails fast when Redis is away (the submission is already committed and the
 * reconciler enqueues it later); workers wait for Redis forever.
 */
export function createRedis(url: string, role: 'producer' | 'worker', cluster = false): RedisClient {
  const options: RedisOptions = {
    ...(role === 'worker' ? { maxRetriesPerRequest: null } : { maxRetriesPerRequest: 1, connectTimeout: 2_000 }),
    socketTimeout: REDIS_SOCKET_TIMEOUT_MS[role],
    keepAlive: REDIS_KEEPALIVE_MS,
  };
  if (!cluster) return new Redis(url, options);
  const seed = new URL(url);
  return new Cluster([{ host: seed.hostname, port: Number(seed.port) || 6379 }], {
    redisOptions: {
      ...options,
      ...(seed.username ? { username: decodeURIComponent(seed.username) } : {}),
      ...(seed.password ? { password: decodeURIComponent(seed.password) } : {}),
      ...(seed.protocol === 'rediss:' ? { tls: {} } : {}),
    },
    ...(role === 'worker' ? {} : { clusterRetryStrategy: (times: number) => Math.min(times * 200, 2_000) }),
  });
}

/**
 * Closes a Redis client at shutdown: QUIT when connected; when Redis is unreachable, QUIT would wait
 * in the offline queue for a reconnection that may never come, so the socket is just dropped.
 */
export function closeRedis(client: RedisClient): Promise<unknown> | undefined {
  if (client.status === 'ready') return client.quit();
  client.disconnect();
  return undefined;
}

type QueueConfig = Pick<Config, 'QUEUE_PREFIX'>;

/**
 * BullMQ's own attempt count never ends a delivery: the worker decides from the row's age
 * (EMAIL_RETRY_HORIZON_MS) and EMAIL_MAX_ATTEMPTS when a temporary failure becomes final, and
 * ends the job with an UnrecoverableError then. This only has to be out of reach.
 */
const UNBOUNDED_ATTEMPTS = 1_000_000;
/** The job's backoff type; the delay comes from the worker's `retryDelay` strategy. */
const BACKOFF_TYPE = 'capped-exponential';

export function createDeliveryQueue(connection: RedisClient, config: QueueConfig): Queue<DeliveryJob> {
  return new Queue<DeliveryJob>(DELIVERY_QUEUE, {
    connection,
    prefix: config.QUEUE_PREFIX,
    // Nothing reads the events stream (no QueueEvents); a short one is trimmed cheaply.
    streams: { events: { maxLen: 1_000 } },
    defaultJobOptions: {
      attempts: UNBOUNDED_ATTEMPTS,
      backoff: { type: BACKOFF_TYPE },
      // A completed job is deleted at once: the row's `sent` status is the record, and the
      // reconciler only asks whether a row still has a pending job. Fewer Redis commands per email
      // (npm run bench, scenario 3).
      removeOnComplete: true,
      // Failed jobs stay for inspection for a week.
      removeOnFail: { age: 7 * 24 * 3600 },
    },
  });
}

// The backoff is a rule of the retry policy; named here too, where the queues were first written.
export { retryDelay, type RetryBackoff } from './submissions/retry-policy.ts';

/** A failed attempt that chose its retry's delay itself, so that its row can say when the retry comes. */
export type ScheduledRetryError = Error & { retryDelayMs?: number };

/**
 * A manual rate limit (Queue.rateLimit, used by the SMTP circuit breaker) only holds when the worker
 * has a limiter: this one is out of reach, so it never limits by itself.
 */
const NO_LIMIT = { max: 1_000_000_000_000, duration: 1_000 };

export function createDeliveryWorker(
  connection: RedisClient,
  config: Pick<Config, 'QUEUE_PREFIX' | 'EMAIL_RETRY_BACKOFF_MS' | 'EMAIL_RETRY_MAX_BACKOFF_MS'>,
  processor: Processor<DeliveryJob>,
  options: Omit<WorkerOptions, 'connection' | 'prefix' | 'settings' | 'limiter'>,
): Worker<DeliveryJob> {
  // The delay the failed attempt chose and wrote on its row (next_attempt_at), when it chose one.
  const backoffStrategy: BackoffStrategy = (attemptsMade, _type, error: ScheduledRetryError | undefined) =>
    error?.retryDelayMs ?? retryDelay(attemptsMade, config);
  return new Worker<DeliveryJob>(DELIVERY_QUEUE, processor, {
    connection,
    prefix: config.QUEUE_PREFIX,
    limiter: NO_LIMIT,
    settings: { backoffStrategy },
    ...options,
  });
}

export function createWebhookQueue(connection: RedisClient, prefix: string): Queue<DeliveryJob> {
  return new Queue<DeliveryJob>(WEBHOOK_QUEUE, {
    connection,
    prefix,
    defaultJobOptions: {
      // As for emails, the worker ends a delivery (WEBHOOK_RETRY_HORIZON_MS), not BullMQ's count.
      attempts: UNBOUNDED_ATTEMPTS,
      backoff: { type: BACKOFF_TYPE },
      removeOnComplete: { age: 3600, count: 10_000 },
      removeOnFail: { age: 7 * 24 * 3600 },
    },
  });
}

/** A failure that names its own earliest retry (a receiver's Retry-After), in milliseconds. */
export type RetryAfterError = Error & { retryAfterMs?: number };

export { webhookRetryDelay } from './webhooks/delivery-policy.ts';

export function createWebhookWorker(
  connection: RedisClient,
  config: Pick<Config, 'QUEUE_PREFIX' | 'WEBHOOK_RETRY_BACKOFF_MS' | 'WEBHOOK_RETRY_MAX_BACKOFF_MS' | 'WEBHOOK_CONCURRENCY' | 'JOB_LOCK_MS'>,
  processor: Processor<DeliveryJob>,
): Worker<DeliveryJob> {
  const backoffStrategy: BackoffStrategy = (attemptsMade, _type, error) => webhookRetryDelay(attemptsMade, error, config);
  return new Worker<DeliveryJob>(WEBHOOK_QUEUE, processor, {
    connection,
    prefix: config.QUEUE_PREFIX,
    settings: { backoffStrategy },
    concurrency: config.WEBHOOK_CONCURRENCY,
    lockDuration: config.JOB_LOCK_MS,
    stalledInterval: config.JOB_LOCK_MS,
  });
}

export function createHousekeepingQueue(connection: RedisClient, prefix: string): Queue<HousekeepingJob> {
  return new Queue<HousekeepingJob>(HOUSEKEEPING_QUEUE, {
    connection,
    prefix,
    defaultJobOptions: { removeOnComplete: true, removeOnFail: { age: 24 * 3600 } },
  });
}

/**
 * One job at a time per process; the queue's global concurrency of 1 makes it one for the fleet. So
 * a run held by a dead worker blocks every periodic job until its lock expires and a live worker
 * takes it back: the lock is JOB_LOCK_MS, as for deliveries, not BullMQ's fixed 30 s.
 */
export function createHousekeepingWorker(connection: RedisClient, config: Pick<Config, 'QUEUE_PREFIX' | 'JOB_LOCK_MS'>, processor: Processor<HousekeepingJob>): Worker<HousekeepingJob> {
  return new Worker<HousekeepingJob>(HOUSEKEEPING_QUEUE, processor, {
    connection,
    prefix: config.QUEUE_PREFIX,
    concurrency: 1,
    lockDuration: config.JOB_LOCK_MS,
    stalledInterval: config.JOB_LOCK_MS,
  });
}

/** Enqueues a delivery; jobId = the row's id, so a second add is a no-op. */
export async function enqueueDelivery(queue: Queue<DeliveryJob>, request: DeliveryRequest): Promise<void> {
  await queue.add(request.name, request.data, { jobId: request.rowId });
}

/**
 * Enqueues several deliveries in one round trip (addBulk's pipeline). A single one is a plain add:
 * addBulk builds an ioredis pipeline, whose constructor copies every command and script onto it,
 * for each call, a cost of its own when requests come one at a time (npm run bench, scenario 2).
 * The same script runs either way.
 */
export async function enqueueDeliveries(queue: Queue<DeliveryJob>, requests: DeliveryRequest[]): Promise<void> {
  if (requests.length === 1) return enqueueDelivery(queue, requests[0]!);
  await queue.addBulk(requests.map((request) => ({ name: request.name, data: request.data, opts: { jobId: request.rowId } })));
}

export class RedisUnavailableError extends Error {
  override name = 'RedisUnavailableError';
}
