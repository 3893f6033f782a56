// What became of a row's job, read from Redis for a page of rows at once: the reconciler's test of
// whether a row still has a job to run (./reconcile.ts, ./unwritten-webhooks.ts).
import type { Queue } from 'bullmq';
import type { DeliveryJob } from '../../shared/deliveries/delivery-jobs.ts';

/** What became of a row's job: none (never added, or lost with Redis's data), finished, or still to run. */
export type JobFate = 'none' | 'finished' | 'pending';

/**
 * Read from each job's hash, one HMGET per row: BullMQ writes a job's hash and its place in the
 * queue in one script, marks a finished job with `finishedOn` (a completed one is deleted at once)
 * and clears it when the job is retried. Queue.getJobState would scan the waiting list for each row,
 * so one run's cost would grow with the square of the backlog, every RECONCILE_INTERVAL_MS
 * (docs/benchmarks.md#scenarios-and-targets).
 */
export async function jobFates(queue: Queue<DeliveryJob>, ids: string[]): Promise<JobFate[]> {
  const redis = await queue.backend.client;
  // Concurrent commands on one connection are pipelined: a page costs about one round trip.
  const hashes = await Promise.all(ids.map((id) => redis.hmget(queue.toKey(id), 'timestamp', 'finishedOn')));
  return hashes.map(([added, finished]) => (added === null ? 'none' : finished === null ? 'pending' : 'finished'));
}
