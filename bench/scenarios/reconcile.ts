// Scenario 10, the reconciler behind a backlog: one run over rows that wait for delivery, each with
// its job waiting in Redis (the queue paused, as while the SMTP circuit breaker holds the
// deliveries), all older than RECONCILE_AFTER_MS, so that the run looks at every one. The service's
// run (src/workers/housekeeping/reconcile.ts, one read of each job's hash) against the same rows asked with
// BullMQ's Queue.getJobState, which scans the waiting list for each job. Redis's CPU and the run's
// time, per backlog size: the second grows with the square of the backlog.
import { createWebhookQueue } from '../../src/shared/infra/queues/queues.ts';
import { createLogger } from '../../src/shared/infra/log.ts';
import { createOrm } from '../../src/shared/infra/db/orm.ts';
import { entities } from '../../src/shared/schema.ts';
import { reconcile, RECONCILE_BATCH } from '../../src/workers/housekeeping/reconcile.ts';
import { QUEUE_PREFIX, resetState, type Ctx } from '../support/context.ts';
import { seedBacklog } from '../support/drains.ts';
import { cpuMs } from '../support/proc.ts';
import type { DeliveryJob } from '../../src/shared/deliveries/delivery-jobs.ts';
import type { AutoresponsePolicy } from '../../src/shared/autoresponses/autoresponses.ts';

/** The backlog's rows are not sent: no autoresponse is decided, the policy only completes the options. */
const NO_AUTORESPONSES: AutoresponsePolicy = { mode: 'off', newKeyPerDay: 0, keyPerDay: 0, erasedForm: (value) => value };

export async function reconcileBacklog(ctx: Ctx): Promise<void> {
  const { rows, log, quick } = ctx;
  const orm = await createOrm(ctx.env.DATABASE_URL!, entities, 4);
  const webhookQueue = createWebhookQueue<DeliveryJob>(ctx.redis, QUEUE_PREFIX);
  try {
    for (const backlog of quick ? [5_000, 20_000] : [10_000, 40_000]) {
      await resetState(ctx);
      await ctx.queue.pause();
      await seedBacklog(ctx, backlog);
      // Saved a minute ago: past RECONCILE_AFTER_MS, so the run reads every row.
      await ctx.sql.query(`update submissions set created_at = created_at - interval '1 minute'`);
      // As autovacuum would have by then: the update's old row versions gone, the planner's figures fresh.
      await ctx.sql.query('vacuum analyze submissions');
      const measure = async (run: () => Promise<unknown>) => {
        const [redisBefore, t0] = [cpuMs(ctx.redisPid), performance.now()];
        await run();
        return { redisMs: cpuMs(ctx.redisPid) - redisBefore, seconds: (performance.now() - t0) / 1000 };
      };
      const service = await measure(() =>
        reconcile(orm.em.fork(), { email: ctx.queue, webhook: webhookQueue }, createLogger('bench', 'silent'), {
          staleAfterMs: 30_000,
          claimLeaseMs: 300_000,
          autoresponse: NO_AUTORESPONSES,
        }),
      );
      const { rows: ids } = await ctx.sql.query<{ id: string }>('select id from submissions order by created_at, id');
      const baseline = await measure(async () => {
        for (let start = 0; start < ids.length; start += RECONCILE_BATCH) {
          await Promise.all(ids.slice(start, start + RECONCILE_BATCH).map((row) => ctx.queue.getJobState(row.id)));
        }
      });
      log(
        `reconciler behind ${backlog} waiting jobs: ${service.seconds.toFixed(2)} s (Redis ${service.redisMs.toFixed(0)} ms) against ${baseline.seconds.toFixed(2)} s with getJobState (Redis ${baseline.redisMs.toFixed(0)} ms)`,
      );
      const scenario = `10 Reconciler, one run behind ${backlog.toLocaleString('en-US')} waiting jobs`;
      rows.push(
        {
          scenario,
          metric: 'Redis CPU per row, vs Queue.getJobState',
          service: (service.redisMs * 1000) / backlog,
          baseline: (baseline.redisMs * 1000) / backlog,
          unit: 'µs',
        },
        { scenario, metric: 'time of the run, vs Queue.getJobState', service: service.seconds * 1000, baseline: baseline.seconds * 1000, unit: 'ms' },
      );
    }
  } finally {
    await ctx.queue.resume();
    await webhookQueue.close();
    await orm.close();
  }
}
