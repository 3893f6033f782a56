// Re-sending a row adds a job under the row's id again. BullMQ ignores an add whose id it still
// holds, so the finished job of the last attempt is removed first.
import type { Queue } from 'bullmq';
import type { DeliveryJob } from '../shared/deliveries/delivery-jobs.ts';

/** Job states in which a job will still run. */
const PENDING_STATES = new Set(['waiting', 'active', 'delayed', 'prioritized', 'waiting-children']);

/** How long a re-send waits for the job that just ended the row to finish in BullMQ too. */
const ACTIVE_WAIT_MS = 3_000;

/**
 * A finished job under the row's id would make the new add a no-op: remove it first. The worker
 * writes the row's outcome before BullMQ moves its job out of `active`, so a re-send right after
 * the failure can find the job still active: it waits for that move (a few ms, at most
 * ACTIVE_WAIT_MS) instead of leaving the row to the reconciler.
 */
export async function clearFinishedJob(queue: Queue<DeliveryJob>, id: string): Promise<void> {
  const job = await queue.getJob(id);
  if (!job) return;
  const until = Date.now() + ACTIVE_WAIT_MS;
  let state = await job.getState();
  while (state === 'active' && Date.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    state = await job.getState();
  }
  if (!PENDING_STATES.has(state)) await job.remove().catch(() => undefined);
}
