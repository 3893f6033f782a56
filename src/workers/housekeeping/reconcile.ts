// The reconciler: nothing accepted is lost between PostgreSQL and Redis. It finds rows that should
// have a delivery job but have none (the enqueue after the commit failed, Redis lost data, a worker
// died mid-send) and enqueues them again. It runs in the housekeeping queue (src/workers/housekeeping/housekeeping.ts),
// one run at a time for the fleet, and walks every such row page by page, however long the backlog:
// a row without a job behind thousands that have one is still found in the same run.
import type { Queue } from 'bullmq';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from '../../shared/infra/log.ts';
import { deliveryKinds, type DeliveryKind, type DeliveryKindName } from '../../shared/submissions/delivery-kinds.ts';
import { deliveryJob, type DeliveryJob } from '../../shared/submissions/delivery-jobs.ts';
import { enqueueDelivery } from '../../shared/infra/queues/queues.ts';
import { AWAITING_JOB, IN_FLIGHT } from '../../shared/submissions/delivery-statuses.ts';
import { findAwaitingJob, type AwaitingRow } from '../../shared/submissions/submissions.ts';

/** Rows read, and their jobs looked up in Redis (pipelined), per step. */
export const RECONCILE_BATCH = 500;

export type ReconcileOptions = { staleAfterMs: number; claimLeaseMs: number };

/** Returns how many rows were enqueued again. */
export async function reconcile(
  em: EntityManager,
  queues: Record<DeliveryKind['queue'], Queue<DeliveryJob>>,
  log: Logger,
  options: ReconcileOptions,
): Promise<number> {
  let enqueued = 0;
  for (const kind of Object.keys(deliveryKinds) as DeliveryKindName[]) {
    for (const status of [...AWAITING_JOB, IN_FLIGHT]) {
      let after: AwaitingRow | undefined;
      for (;;) {
        const rows = await findAwaitingJob(em, kind, status, options, RECONCILE_BATCH, after);
        enqueued += await enqueueJobless(queues[deliveryKinds[kind].queue], kind, rows, log);
        if (rows.length < RECONCILE_BATCH) break;
        after = rows[rows.length - 1];
      }
    }
  }
  if (enqueued) log.warn({ enqueued }, 'reconciler enqueued rows that had no job');
  return enqueued;
}

/** What became of a row's job: none (never added, or lost with Redis's data), finished, or still to run. */
type JobFate = 'none' | 'finished' | 'pending';

/**
 * Read from each job's hash, one HMGET per row: BullMQ writes a job's hash and its place in the
 * queue in one script, marks a finished job with `finishedOn` (a completed one is deleted at once)
 * and clears it when the job is retried. Queue.getJobState would scan the waiting list for each row,
 * so one run's cost would grow with the square of the backlog, every RECONCILE_INTERVAL_MS
 * (docs/benchmarks.md#scenarios-and-targets).
 */
async function jobFates(queue: Queue<DeliveryJob>, rows: AwaitingRow[]): Promise<JobFate[]> {
  const redis = await queue.backend.client;
  // Concurrent commands on one connection are pipelined: a page costs about one round trip.
  const hashes = await Promise.all(rows.map((row) => redis.hmget(queue.toKey(row.id), 'timestamp', 'finishedOn')));
  return hashes.map(([added, finished]) => (added === null ? 'none' : finished === null ? 'pending' : 'finished'));
}

async function enqueueJobless(queue: Queue<DeliveryJob>, kind: DeliveryKindName, rows: AwaitingRow[], log: Logger): Promise<number> {
  const fates = await jobFates(queue, rows);
  let enqueued = 0;
  for (const [index, row] of rows.entries()) {
    const fate = fates[index]!;
    if (fate === 'pending') continue;
    try {
      // A finished job under the same id would make the new add a no-op.
      if (fate === 'finished') await queue.remove(row.id);
      await enqueueDelivery(queue, deliveryJob(kind, row.id));
      enqueued += 1;
    } catch (error) {
      // Its job changed hands meanwhile (taken up, locked): the next run looks again.
      log.debug({ err: error, id: row.id }, 'reconciler left a row for the next run');
    }
  }
  return enqueued;
}
