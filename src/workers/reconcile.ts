// The reconciler: nothing accepted is lost between PostgreSQL and Redis. It finds rows that should
// have a delivery job but have none (the enqueue after the commit failed, Redis lost data, a worker
// died mid-send) and enqueues them again. One BullMQ job scheduler runs it for the whole fleet.
import type { Queue } from 'bullmq';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from '../shared/log.ts';
import { enqueueDelivery, keyEmailJob, submissionJob, type DeliveryJob } from '../shared/queue.ts';

export const RECONCILE_SCHEDULER_ID = 'reconcile';
const BATCH = 500;
/** Job states in which a job will still run: such a row is in hand. */
const PENDING_STATES = new Set(['waiting', 'active', 'delayed', 'prioritized', 'waiting-children']);

export type ReconcileOptions = { staleAfterMs: number; claimLeaseMs: number };

/** Returns how many rows were enqueued again. */
export async function reconcile(em: EntityManager, queue: Queue<DeliveryJob>, log: Logger, options: ReconcileOptions): Promise<number> {
  const stale = `((email_status in ('queued', 'retrying') and created_at < now() - make_interval(secs => ?))
                  or (email_status = 'sending' and claimed_at < now() - make_interval(secs => ?)))`;
  const ages = [options.staleAfterMs / 1000, options.claimLeaseMs / 1000];
  const rows = await em.execute<Array<{ id: string; kind: 'submission' | 'key-email' }>>(
    `(select id, 'submission' as kind, created_at from submissions where ${stale} order by created_at limit ${BATCH})
     union all
     (select id, 'key-email' as kind, created_at from key_emails where ${stale} order by created_at limit ${BATCH})
     order by created_at`,
    [...ages, ...ages],
  );

  let enqueued = 0;
  for (const row of rows) {
    const job = await queue.getJob(row.id);
    if (job) {
      if (PENDING_STATES.has(await job.getState())) continue;
      // A finished job under the same id would make the new add a no-op.
      await job.remove();
    }
    await enqueueDelivery(queue, row.kind === 'submission' ? submissionJob(row.id) : keyEmailJob(row.id));
    enqueued += 1;
  }
  if (enqueued) log.warn({ enqueued }, 'reconciler enqueued rows that had no job');
  return enqueued;
}
