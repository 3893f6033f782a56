// Scenario 7, workers SIGKILLed mid-backlog: the duplicate window measured by what it costs, the
// emails sent twice against the rows in flight at each kill.
import { resetState, type Ctx } from '../support/context.ts';
import { seedBacklog } from '../support/drains.ts';
import { percentile } from '../support/load.ts';
import { sleep } from '../support/proc.ts';
import { spawnWorker, stopReporting } from '../support/processes.ts';
import type { Arrival } from '../support/sink.ts';

/**
 * The duplicate window measured by what it costs: one worker drains a backlog and is SIGKILLed at
 * random moments, `S.kills` times, a fresh one taking over each time. A duplicate is a Message-ID
 * the sink answered 250 more than once. Two kinds of server are counted: one that commits a message
 * with its 250, so an answer written after the kill (before the next worker was ready) delivered
 * nothing; and one that queues it before answering, so every answer counts (RFC 1047:
 * its window starts at the end of the data). The window the target is on, 250 → `sent`, is the first.
 * In flight at a kill: the rows the killed worker had claimed and not recorded, read from
 * PostgreSQL right after the kill. Target: duplicates ≤ 0.1 % of those.
 */
export async function killMidBacklog(ctx: Ctx): Promise<void> {
  const { S, rows, notes } = ctx;
  const scenario = '7 Worker SIGKILLed mid-backlog';
  const count = S.kills * 400;
  await resetState(ctx);
  await ctx.queue.pause();
  await seedBacklog(ctx, count);
  // Short leases, so that what a killed worker held is taken up again within seconds.
  const env = { JOB_LOCK_MS: '2000', CLAIM_LEASE_MS: '3000', RECONCILE_INTERVAL_MS: '1000', RECONCILE_AFTER_MS: '1000' };
  ctx.sink.reset();
  let worker = await spawnWorker(ctx, 1, env);
  await ctx.queue.resume();
  let inFlight = 0;
  let generation = 1;
  let lastKillAt: Date | undefined;
  let sent: number;
  /** From each kill until the next worker is ready: no live client could read an answer then. */
  const deadTimes: Array<[from: number, to: number]> = [];
  try {
    for (let kill = 0; kill < S.kills; kill += 1) {
      // Let the fresh worker reach full speed, then kill it at a random moment.
      const reached = await ctx.sink.waitFor(ctx.sink.count() + 150, Date.now() + 30_000);
      if (!reached) break;
      await sleep(50 + Math.random() * 400);
      const exited = new Promise((resolve) => worker.child.once('exit', resolve));
      const killedAt = performance.timeOrigin + performance.now();
      process.kill(worker.pid, 'SIGKILL');
      await exited;
      await stopReporting(ctx, worker, scenario);
      // Rows claimed by this worker (after the previous kill) and never recorded; no worker runs now.
      const {
        rows: [held],
      } = await ctx.sql.query<{ n: number; at: Date }>(
        `select count(*)::int as n, now() as at from submissions where email_status = 'sending' and claimed_at > coalesce($1::timestamptz, '-infinity')`,
        [lastKillAt],
      );
      inFlight += held!.n;
      lastKillAt = held!.at;
      generation += 1;
      worker = await spawnWorker(ctx, generation, env);
      // Until the next worker is ready no live client exists: the sink's 250s written meanwhile
      // went to the dead one (the sink notices a closed connection only when its loop reads it).
      deadTimes.push([killedAt, performance.timeOrigin + performance.now()]);
    }
    sent = await waitForAllSent(ctx, count, Date.now() + S.drainCapMs);
  } finally {
    await stopReporting(ctx, worker, scenario);
  }
  const duplicatesOf = (accepted: Arrival[]) => accepted.length - new Set(accepted.map((item) => item.id)).size;
  const answeredToTheDead = (item: Arrival) => deadTimes.some(([from, to]) => item.at >= from && item.at < to);
  const atAnswer = duplicatesOf(ctx.sink.accepted.filter((item) => !answeredToTheDead(item)));
  const atDataEnd = duplicatesOf(ctx.sink.accepted);
  if (sent < count) {
    const { rows: left } = await ctx.sql.query<{ email_status: string; n: number }>(
      `select email_status, count(*)::int as n from submissions where email_status <> 'sent' group by 1`,
    );
    notes.push(
      `7: only ${sent} of ${count} rows sent within ${S.drainCapMs / 1000} s; the rest: ${left.map((row) => `${row.n} ${row.email_status}`).join(', ')}`,
    );
  }
  // The window itself, seen from outside the worker: from the sink's 250 to the row's `sent_at`
  // (the start of the UPDATE's transaction in PostgreSQL), for the messages accepted once.
  const window = await sentWindowFromOutside(ctx, ctx.sink.accepted);
  const share = (duplicates: number) => (inFlight ? (duplicates / inFlight) * 100 : Number.NaN);
  rows.push(
    { scenario, metric: `${generation - 1} kills: rows in flight`, service: inFlight, baseline: Number.NaN, unit: 'rows' },
    { scenario, metric: 'duplicates, server commits at its 250', service: atAnswer, baseline: Number.NaN, unit: 'emails' },
    { scenario, metric: '… of the rows in flight', service: share(atAnswer), baseline: Number.NaN, unit: '%', target: { kind: '<=', value: 0.1 } },
    { scenario, metric: 'duplicates, server queues at data end', service: atDataEnd, baseline: Number.NaN, unit: 'emails' },
    { scenario, metric: '… of the rows in flight', service: share(atDataEnd), baseline: Number.NaN, unit: '%' },
    { scenario, metric: 'sink 250 → sent_at p50', service: window.p50, baseline: Number.NaN, unit: 'ms' },
    { scenario, metric: 'sink 250 → sent_at p99', service: window.p99, baseline: Number.NaN, unit: 'ms' },
  );
}

/** From the sink's 250 to `sent_at`, per message accepted exactly once: p50 and p99 in ms. */
async function sentWindowFromOutside(ctx: Ctx, accepted: Arrival[]): Promise<{ p50: number; p99: number }> {
  const once = new Map<string, number | undefined>();
  for (const item of accepted) once.set(item.id, once.has(item.id) ? undefined : item.at);
  const { rows: sent } = await ctx.sql.query<{ id: string; sent_ms: string }>(
    `select 'submission-' || id as id, extract(epoch from sent_at) * 1000 as sent_ms from submissions where email_status = 'sent'`,
  );
  const gaps = sent
    .flatMap((row) => {
      const at = once.get(row.id);
      return at === undefined ? [] : [Number(row.sent_ms) - at];
    })
    .sort((a, b) => a - b);
  return { p50: percentile(gaps, 0.5), p99: percentile(gaps, 0.99) };
}

/** Polls until `count` rows are `sent` or the deadline passes; returns how many are. */
async function waitForAllSent(ctx: Ctx, count: number, deadline: number): Promise<number> {
  for (;;) {
    const {
      rows: [row],
    } = await ctx.sql.query<{ n: number }>(`select count(*)::int as n from submissions where email_status = 'sent'`);
    if (row!.n >= count || Date.now() >= deadline) return row!.n;
    await sleep(200);
  }
}
