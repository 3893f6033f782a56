// The reconciler: nothing accepted is lost between PostgreSQL and Redis. It finds rows that should
// have a delivery job but have none (the enqueue after the commit failed, Redis lost data, a worker
// died mid-send) and enqueues them again, and the webhook deliveries of queued submissions that no
// worker wrote (./unwritten-webhooks.ts), and makes the copies and the autoresponse of submissions
// whose owner's email a worker of the previous release sent without them (./unfinished-fan-outs.ts).
// It runs in the housekeeping queue (src/workers/housekeeping/housekeeping.ts), one run at a time
// for the fleet, and walks every such row page by page, however long the backlog:
// a row without a job behind thousands that have one is still found in the same run. Webhooks come
// first, so that a backlog of emails held by the SMTP breaker does not delay them.
import type { Queue } from 'bullmq';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from '../../shared/infra/log.ts';
import { deliveryKinds, type DeliveryKind, type DeliveryKindName } from '../../shared/deliveries/delivery-kinds.ts';
import { deliveryJob, type DeliveryJob } from '../../shared/deliveries/delivery-jobs.ts';
import { enqueueDelivery } from '../../shared/infra/queues/queues.ts';
import { AWAITING_JOB, IN_FLIGHT } from '../../shared/deliveries/delivery-statuses.ts';
import { findAwaitingJob, type AwaitingRow } from '../../shared/deliveries/deliveries.ts';
import { jobFates } from './job-fates.ts';
import { enqueueUnwrittenWebhooks } from './unwritten-webhooks.ts';
import { finishFanOuts } from './unfinished-fan-outs.ts';
import type { AutoresponsePolicy } from '../../shared/autoresponses/autoresponses.ts';

/** Rows read, and their jobs looked up in Redis (pipelined), per step. */
export const RECONCILE_BATCH = 500;

/** `autoresponse`: the operator's policy, for the autoresponses of the submissions sent without them. */
export type ReconcileOptions = { staleAfterMs: number; claimLeaseMs: number; autoresponse: AutoresponsePolicy };

/** Returns how many rows were enqueued again. */
export async function reconcile(
  em: EntityManager,
  queues: Record<DeliveryKind['queue'], Queue<DeliveryJob>>,
  log: Logger,
  options: ReconcileOptions,
): Promise<number> {
  let enqueued = await enqueueUnwrittenWebhooks(em, queues.webhook, log, options.staleAfterMs, RECONCILE_BATCH);
  const finished = await finishFanOuts(em, queues.email, log, { settledAfterMs: options.staleAfterMs, policy: options.autoresponse }, RECONCILE_BATCH);
  if (finished) log.warn({ finished }, 'reconciler made the copies and the autoresponse of submissions sent without them');
  const kinds = ['webhook', ...Object.keys(deliveryKinds).filter((kind) => kind !== 'webhook')] as DeliveryKindName[];
  for (const kind of kinds) {
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
  const fates = await jobFates(
    queue,
    rows.map((row) => row.id),
  );
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
