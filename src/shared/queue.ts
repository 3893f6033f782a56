// Queue names, job payloads and the factories for Redis connections, queues and workers.
// A job carries ids only; the worker reloads everything else from PostgreSQL.
import { Queue, Worker, type Processor, type WorkerOptions } from 'bullmq';
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import type { Config } from './config.ts';
import { withTimeout } from './timeout.ts';

export const DELIVERY_QUEUE = 'deliveries';

/**
 * The jobs of the delivery queue. Ids only: the row to deliver, and the id of the request that
 * created it (to follow it in logs); the periodic jobs carry nothing.
 */
export type DeliveryJobs = {
  submission: { submissionId: string; requestId?: string };
  'key-email': { keyEmailId: string; requestId?: string };
  /** The reconciler's periodic run (see src/workers/reconcile.ts). */
  reconcile: Record<string, never>;
  /** The retention run (see src/workers/retention.ts). */
  retention: Record<string, never>;
};
export type DeliveryJobName = keyof DeliveryJobs;
export type DeliveryJob = DeliveryJobs[DeliveryJobName];

type RowJobName = 'submission' | 'key-email';

/** A job to add: the job id is the row's id, so a second add of the same row is a no-op. */
export type DeliveryRequest = { [N in RowJobName]: { name: N; data: DeliveryJobs[N] } }[RowJobName];

export const submissionJob = (submissionId: string, requestId?: string): DeliveryRequest => ({
  name: 'submission',
  data: requestId ? { submissionId, requestId } : { submissionId },
});
export const keyEmailJob = (keyEmailId: string, requestId?: string): DeliveryRequest => ({
  name: 'key-email',
  data: requestId ? { keyEmailId, requestId } : { keyEmailId },
});

const jobIdOf = (request: DeliveryRequest) =>
  request.name === 'submission' ? request.data.submissionId : request.data.keyEmailId;

/** A single Redis server or a Redis Cluster (REDIS_CLUSTER=true, REDIS_URL naming one node). */
export type RedisClient = Redis | Cluster;

/**
 * The API fails fast when Redis is away (the submission is already committed and the
 * reconciler enqueues it later); workers wait for Redis forever.
 */
export function createRedis(url: string, role: 'producer' | 'worker', cluster = false): RedisClient {
  const options: RedisOptions =
    role === 'worker' ? { maxRetriesPerRequest: null } : { maxRetriesPerRequest: 1, connectTimeout: 2_000 };
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

type QueueConfig = Pick<Config, 'QUEUE_PREFIX' | 'EMAIL_MAX_ATTEMPTS' | 'EMAIL_RETRY_BACKOFF_MS'>;

export function createDeliveryQueue(connection: RedisClient, config: QueueConfig): Queue<DeliveryJob> {
  return new Queue<DeliveryJob>(DELIVERY_QUEUE, {
    connection,
    prefix: config.QUEUE_PREFIX,
    defaultJobOptions: {
      attempts: config.EMAIL_MAX_ATTEMPTS,
      // Exponential backoff with jitter, so a burst of failures does not retry in lockstep.
      backoff: { type: 'exponential', delay: config.EMAIL_RETRY_BACKOFF_MS, jitter: 0.5 },
      removeOnComplete: { age: 3600, count: 10_000 },
      // Failed jobs stay for inspection for a week.
      removeOnFail: { age: 7 * 24 * 3600 },
    },
  });
}

export function createDeliveryWorker(
  connection: RedisClient,
  prefix: string,
  processor: Processor<DeliveryJob>,
  options: Omit<WorkerOptions, 'connection' | 'prefix'>,
): Worker<DeliveryJob> {
  return new Worker<DeliveryJob>(DELIVERY_QUEUE, processor, { connection, prefix, ...options });
}

/** Enqueues a delivery; jobId = the row's id, so a second add is a no-op. */
export async function enqueueDelivery(queue: Queue<DeliveryJob>, request: DeliveryRequest): Promise<void> {
  await queue.add(request.name, request.data, { jobId: jobIdOf(request) });
}

export class RedisUnavailableError extends Error {
  override name = 'RedisUnavailableError';
}

/**
 * For request paths: enqueue only while Redis is connected, and give up after `timeoutMs`,
 * so a Redis outage never holds a request. The caller's row is committed already.
 */
export async function enqueueDeliveryFast(
  queue: Queue<DeliveryJob>,
  redis: RedisClient,
  request: DeliveryRequest,
  timeoutMs = 2_000,
): Promise<void> {
  if (redis.status !== 'ready') throw new RedisUnavailableError(`redis is ${redis.status}`);
  await withTimeout(enqueueDelivery(queue, request), timeoutMs, `enqueue timed out after ${timeoutMs} ms`);
}
