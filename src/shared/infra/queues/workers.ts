// The BullMQ workers of the three queues: their concurrency, locks and retry delays.
import { Worker, type BackoffStrategy, type Processor, type WorkerOptions } from 'bullmq';
import type { Config } from '../config.ts';
import { DELIVERY_QUEUE, WEBHOOK_QUEUE, HOUSEKEEPING_QUEUE, type HousekeepingJob } from './jobs.ts';
import { type RedisClient } from './redis.ts';
import { queueTelemetry } from '../tracing.ts';

/** A failed attempt that chose its retry's delay itself, so that its row can say when the retry comes. */
export type ScheduledRetryError = Error & { retryDelayMs?: number };

/**
 * The delay before retry number `attemptsMade` of a failed job: the feature that owns the deliveries
 * hands it in (src/shared/deliveries/retry-policy.ts, src/shared/webhooks/delivery-policy.ts).
 */
export type RetryDelay = (attemptsMade: number, error: (Error & { retryAfterMs?: number }) | undefined) => number;

/**
 * A manual rate limit (Queue.rateLimit, used by the SMTP circuit breaker) only holds when the worker
 * has a limiter: this one is out of reach, so it never limits by itself.
 */
const NO_LIMIT = { max: 1_000_000_000_000, duration: 1_000 };

export function createDeliveryWorker<Job>(
  connection: RedisClient,
  config: Pick<Config, 'QUEUE_PREFIX'>,
  processor: Processor<Job>,
  options: Omit<WorkerOptions, 'connection' | 'prefix' | 'settings' | 'limiter'>,
  retryDelay: RetryDelay,
): Worker<Job> {
  // The delay the failed attempt chose and wrote on its row (next_attempt_at), when it chose one.
  const backoffStrategy: BackoffStrategy = (attemptsMade, _type, error: ScheduledRetryError | undefined) =>
    error?.retryDelayMs ?? retryDelay(attemptsMade, error);
  return new Worker<Job>(DELIVERY_QUEUE, processor, {
    connection,
    prefix: config.QUEUE_PREFIX,
    limiter: NO_LIMIT,
    ...queueTelemetry(),
    settings: { backoffStrategy },
    ...options,
  });
}

/** A failure that names its own earliest retry (a receiver's Retry-After), in milliseconds. */
export type RetryAfterError = Error & { retryAfterMs?: number };

export function createWebhookWorker<Job>(
  connection: RedisClient,
  config: Pick<Config, 'QUEUE_PREFIX' | 'WEBHOOK_CONCURRENCY' | 'JOB_LOCK_MS'>,
  processor: Processor<Job>,
  retryDelay: RetryDelay,
): Worker<Job> {
  const backoffStrategy: BackoffStrategy = (attemptsMade, _type, error: RetryAfterError | undefined) => retryDelay(attemptsMade, error);
  return new Worker<Job>(WEBHOOK_QUEUE, processor, {
    connection,
    prefix: config.QUEUE_PREFIX,
    settings: { backoffStrategy },
    ...queueTelemetry(),
    concurrency: config.WEBHOOK_CONCURRENCY,
    lockDuration: config.JOB_LOCK_MS,
    stalledInterval: config.JOB_LOCK_MS,
  });
}

/**
 * One job at a time per process; the queue's global concurrency of 1 makes it one for the fleet. So
 * a run held by a dead worker blocks every periodic job until its lock expires and a live worker
 * takes it back: the lock is JOB_LOCK_MS, as for deliveries, not BullMQ's fixed 30 s.
 */
export function createHousekeepingWorker(
  connection: RedisClient,
  config: Pick<Config, 'QUEUE_PREFIX' | 'JOB_LOCK_MS'>,
  processor: Processor<HousekeepingJob>,
): Worker<HousekeepingJob> {
  return new Worker<HousekeepingJob>(HOUSEKEEPING_QUEUE, processor, {
    connection,
    prefix: config.QUEUE_PREFIX,
    concurrency: 1,
    lockDuration: config.JOB_LOCK_MS,
    stalledInterval: config.JOB_LOCK_MS,
  });
}
