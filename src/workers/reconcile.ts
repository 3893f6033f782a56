// The reconciler: nothing accepted is lost between PostgreSQL and Redis. It finds rows that should
// have a delivery job but have none (the enqueue after the commit failed, Redis lost data, a worker
// died mid-send) and enqueues them again. It runs in the housekeeping queue (src/workers/housekeeping.ts),
// one run at a time for the fleet, and walks every such row page by page, however long the backlog:
// a row without a job behind thousands that have one is still found in the same run.
import type { Queue } from 'bullmq';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from '../shared/log.ts';
import { deliveryKinds, type DeliveryKind, type DeliveryKindName } from '../shared/delivery-kinds.ts';
import { deliveryJob, enqueueDelivery, type DeliveryJob } from '../shared/queue.ts';
import { AWAITING_JOB, IN_FLIGHT } from '../shared/delivery-statuses.ts';
import { findAwaitingJob, type AwaitingRow } from '../shared/delivery-rows.ts';

/** Rows read, and job states asked of Redis (pipelined), per step. */
export const RECONCILE_BATCH = 500;
/** Job states in which a job will still run: such a row is in hand. */
const PENDING_STATES = new Set(['waiting', 'active', 'delayed', 'prioritized', 'waiting-children']);

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

async function enqueueJobless(queue: Queue<DeliveryJob>, kind: DeliveryKindName, rows: AwaitingRow[], log: Logger): Promise<number> {
  // Concurrent commands on one connection are pipelined: a page costs about one round trip.
  const states = await Promise.all(rows.map((row) => queue.getJobState(row.id)));
  let enqueued = 0;
  for (const [index, row] of rows.entries()) {
    const state = states[index]!;
    if (PENDING_STATES.has(state)) continue;
    try {
      // A finished job under the same id would make the new add a no-op.
      if (state !== 'unknown') await queue.remove(row.id);
      await enqueueDelivery(queue, deliveryJob(kind, row.id));
      enqueued += 1;
    } catch (error) {
      // Its job changed hands meanwhile (taken up, locked): the next run looks again.
      log.debug({ err: error, id: row.id }, 'reconciler left a row for the next run');
    }
  }
  return enqueued;
}
