// Flushing the retry timers: after an outage, the emails whose jobs wait on a retry timer are tried
// now rather than when their timers end (up to EMAIL_RETRY_MAX_BACKOFF_MS, an hour, after the
// relay answers again). Run when the SMTP circuit breaker closes (src/workers/delivery/smtp-breaker.ts) and when
// an operator asks (POST /admin/deliveries/flush, `npm run admin -- deliveries flush`).
//
// Paced, so that the relay that just came back is not handed the whole backlog at once: the first
// `perSecond` jobs (those whose timers end soonest) are promoted now, the next `perSecond` get timers
// that end one second from now, and so on; a timer that ends sooner than its turn is kept. The pace
// is written into the jobs' timers in Redis, so it holds whoever started the flush (a CLI that exits
// at once, say) and whichever workers take the jobs.
import type { Queue } from 'bullmq';
import type { EntityManager } from '@mikro-orm/postgresql';
import { setNextAttempts } from './data/delivery-rows.ts';
import type { DeliveryJob } from './delivery-jobs.ts';
import type { RedisClient } from '../infra/queues/redis.ts';

/** A delivery job's id is its row's id; anything else in the delayed set is not a retry timer. */
const ROW_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** BullMQ keeps a delayed job's due time, in ms, times 0x1000 (the low 12 bits order equal times). */
const SCORE_PER_MS = 0x1000;
/** Jobs changed at a time: one Redis round trip each, overlapped. */
const PARALLEL = 50;

export type FlushResult = {
  /** Tried now: moved from their timers to the waiting list. */
  promoted: number;
  /** Brought forward to a later second of the pace. */
  scheduled: number;
  /** Their timers end before their turn would come: left as they were. */
  unchanged: number;
  per_second: number;
  /** When the last job brought forward comes due; null when none was. */
  last_at: string | null;
};

export type FlushDeps = { queue: Queue<DeliveryJob>; redis: RedisClient; em: EntityManager };

export async function flushRetries(deps: FlushDeps, perSecond: number): Promise<FlushResult> {
  const start = Date.now();
  const entries = await deps.redis.zrange(deps.queue.keys.delayed!, 0, -1, 'WITHSCORES');
  // Ascending by due time: the soonest keep the first turns.
  const timers: Array<{ id: string; due: number }> = [];
  for (let i = 0; i + 1 < entries.length; i += 2) {
    const id = entries[i]!;
    if (ROW_ID.test(id)) timers.push({ id, due: Math.floor(Number(entries[i + 1]) / SCORE_PER_MS) });
  }
  const plans = timers.flatMap(({ id, due }, index) => {
    const turn = start + Math.floor(index / perSecond) * 1_000;
    return due <= turn ? [] : [{ id, at: turn, now: turn === start }];
  });
  const changed: Array<{ id: string; at: Date }> = [];
  for (let i = 0; i < plans.length; i += PARALLEL) {
    await Promise.all(
      plans.slice(i, i + PARALLEL).map(async (plan) => {
        const job = await deps.queue.getJob(plan.id);
        if (!job) return;
        try {
          if (plan.now) await job.promote();
          else await job.changeDelay(Math.max(0, plan.at - Date.now()));
          changed.push({ id: plan.id, at: new Date(plan.at) });
        } catch {
          // Taken by a worker, or removed, since the listing: nothing to bring forward.
        }
      }),
    );
  }
  await setNextAttempts(deps.em, changed);
  const promoted = changed.filter((row) => row.at.getTime() === start).length;
  const last = changed.reduce((latest, row) => Math.max(latest, row.at.getTime()), 0);
  return {
    promoted,
    scheduled: changed.length - promoted,
    unchanged: timers.length - plans.length,
    per_second: perSecond,
    last_at: changed.length ? new Date(last).toISOString() : null,
  };
}
