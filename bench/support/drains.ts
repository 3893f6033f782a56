// Draining a backlog to the SMTP sink, measured: by the service's workers (from seeded submissions)
// or by the baseline loop, with throughput, CPU per email, RSS and the duplicate window.
import { submissionJob } from '../../src/shared/deliveries/delivery-jobs.ts';
import { BENCH_MESSAGE, BENCH_SENDER } from '../floor/message.ts';
import { resetState, WORKER_CONCURRENCY, type Ctx } from './context.ts';
import { cpuProbes, cpuSnapshot, probe, recordCpu, roundTrips, type CpuProbe } from './cpu.ts';
import { now } from './load.ts';
import { busyShare, machineCpu, peakRssBytes, resetPeakRss, rssBytes, sampleRss, sleep, spawnNode, waitForMessage, type Child } from './proc.ts';
import { flagsFor, spawnWorker, stopReporting } from './processes.ts';
import { freePort, histogramSince, quantileMs, scrapeHistogram, SENT_WINDOW_METRIC, type Histogram } from './sent-window.ts';
import type { Sink } from './sink.ts';

export async function seedBacklog(ctx: Ctx, count: number, attachmentKey?: { key: string; size: number }): Promise<string[]> {
  const { rows: seeded } = await ctx.sql.query<{ id: string }>(
    `insert into submissions (id, key_id, email, message, subject, custom_fields, client_ip)
     select gen_random_uuid(), $1, $2, $3, $4, $5, '127.0.0.1' from generate_series(1, $6::int)
     returning id`,
    [
      ctx.keyId,
      BENCH_SENDER,
      BENCH_MESSAGE,
      `New contact form submission from ${BENCH_SENDER}`,
      JSON.stringify([
        ['name', 'Ada Lovelace'],
        ['company', 'Analytical Engines Ltd'],
      ]),
      count,
    ],
  );
  const ids = seeded.map((row) => row.id);
  if (attachmentKey) {
    await ctx.sql.query(
      `insert into attachments (id, submission_id, field_name, filename, content_type, size, storage_key, sha256)
       select gen_random_uuid(), id, 'file', 'attachment.bin', 'application/octet-stream', $2, $3, repeat('0', 64)
         from unnest($1::uuid[]) as id`,
      [ids, attachmentKey.size, attachmentKey.key],
    );
  }
  for (let start = 0; start < ids.length; start += 1_000) {
    await ctx.queue.addBulk(
      ids.slice(start, start + 1_000).map((id) => {
        const job = submissionJob(id);
        return { name: job.name, data: job.data, opts: { jobId: id } };
      }),
    );
  }
  return ids;
}

/** A drain's figures; `cpuPerEmail`: CPU ms per email of the loop, or of worker + PostgreSQL + Redis. */
export type Drain = { count: number; seconds: number; busy: number; drained: boolean; cpuPerEmail: number };

/** One moment of a drain: the CPU of every probe, the round trips, the machine's CPU, and the emails arrived. */
type Mark = { cpu: Map<string, number>; trips: { pg: number; redis: number }; machine: ReturnType<typeof machineCpu>; at: number; arrived: number };

async function mark(ctx: Ctx, probes: CpuProbe[]): Promise<Mark> {
  return { cpu: cpuSnapshot(probes), trips: await roundTrips(ctx), machine: machineCpu(), at: now(), arrived: ctx.sink.count() };
}

/**
 * Starts a drain of `warmup + count` emails and measures the last `count`: the first `warmup`
 * emails are the processes' warm-up (their JIT compiler is busy for the first few thousand
 * emails, once per process, so a cold drain charges that to each email, the more so the more
 * processes share it). Their CPU per email is recorded too, as the cold-start figure.
 */
async function measureDrain(
  ctx: Ctx,
  title: string,
  probes: CpuProbe[],
  warmup: number,
  count: number,
  start: () => Promise<void> | void,
  onWarm?: () => Promise<void>,
) {
  const deadline = Date.now() + ctx.S.drainCapMs;
  const cold = await mark(ctx, probes);
  await start();
  let warm = cold;
  let coldCpu: Map<string, number> | undefined;
  if (warmup > 0) {
    await ctx.sink.waitFor(warmup, deadline);
    warm = await mark(ctx, probes);
    await onWarm?.();
    coldCpu = recordCpu(ctx, `${title}, warm-up`, cold.cpu, warm.cpu, warm.arrived - cold.arrived, busyShare(cold.machine, warm.machine), {
      before: cold.trips,
      after: warm.trips,
    });
  }
  const drained = await ctx.sink.waitFor(warmup + count, deadline);
  const end = await mark(ctx, probes);
  const busy = busyShare(warm.machine, end.machine);
  const cpu = recordCpu(ctx, title, warm.cpu, end.cpu, end.arrived - warm.arrived, busy, { before: warm.trips, after: end.trips });
  return { drained, busy, cpu, coldCpu, t0: warm.at, from: warm.arrived, measured: Math.min(count, warmup + count - warm.arrived) };
}

/** What a drain may add: the RSS watched, emails of warm-up before the `total` measured. */
export type DrainOptions = { watchRss?: boolean; warmup?: number };

/** Runs the baseline loop: `processes` processes sharing the messages, 50 at a time each. */
export async function mailLoop(
  ctx: Ctx,
  title: string,
  processes: number,
  total: number,
  { watchRss = false, warmup = 0, extraEnv = {} }: DrainOptions & { extraEnv?: Record<string, string> } = {},
): Promise<Drain & { peakRss: number; coldCpuPerEmail?: number }> {
  const children: Child[] = [];
  try {
    for (let index = 0; index < processes; index += 1) {
      const count = Math.floor((warmup + total) / processes) + (index < (warmup + total) % processes ? 1 : 0);
      const child = await spawnNode({
        name: `mail-loop-${index}`,
        script: 'bench/floor/mail-loop.ts',
        env: { ...ctx.env, ...extraEnv, COUNT: String(count), CONCURRENCY: String(WORKER_CONCURRENCY) },
        ipc: true,
        nodeArgs: flagsFor(ctx, `mail-loop-${index}`),
      });
      await waitForMessage(child, 'ready');
      children.push(child);
    }
    const samplers = watchRss ? children.map((child) => (resetPeakRss(child.pid), sampleRss(child.pid))) : [];
    ctx.sink.reset();
    const done = children.map((child) => waitForMessage<{ type: 'done'; failed: number; firstError?: string }>(child, 'done', ctx.S.drainCapMs + 5_000));
    const drain = await measureDrain(ctx, title, cpuProbes(ctx, [probe('loop', children)]), warmup, total, () => {
      for (const child of children) child.child.send({ type: 'go' });
    });
    const peakRss = Math.max(0, ...samplers.map((sampler, index) => Math.max(sampler.stop(), peakRssBytes(children[index]!.pid))));
    for (const result of await Promise.allSettled(done)) {
      if (result.status === 'fulfilled' && result.value.failed)
        ctx.notes.push(`baseline loop: ${result.value.failed} sends failed (${result.value.firstError})`);
    }
    return {
      ...elapsed(ctx.sink, drain.t0, drain.from, drain.measured),
      drained: drain.drained,
      busy: drain.busy,
      peakRss,
      cpuPerEmail: drain.cpu.get('loop') ?? Number.NaN,
      ...(drain.coldCpu ? { coldCpuPerEmail: drain.coldCpu.get('loop') ?? Number.NaN } : {}),
    };
  } finally {
    for (const child of children) await child.stop();
  }
}

/** Throughput at the sink: the `expected` messages after the first `from`, over the time from `t0` to the last of them. */
function elapsed(sink: Sink, t0: number, from: number, expected: number): { count: number; seconds: number } {
  const arrivals = sink.arrivals.slice(from, from + expected);
  const last = arrivals.length ? arrivals[arrivals.length - 1]!.at : now();
  return { count: arrivals.length, seconds: Math.max(0.001, (arrivals.length >= expected ? last : now()) - t0) / 1000 };
}

/**
 * The duplicate window (250 → `sent` committed) during a drain: p50/p99, and the share of the busy
 * job slots' time spent inside it, which is the share of a SIGKILLed worker's in-flight jobs that
 * would be sent twice.
 */
export type SentWindow = { p50: number; p99: number; share: number };

export async function serviceDrain(
  ctx: Ctx,
  title: string,
  workers: number,
  count: number,
  {
    watchRss = false,
    warmup = 0,
    attachment,
    extraEnv = {},
    extraProbes = [],
    histogram,
  }: DrainOptions & {
    attachment?: { key: string; size: number };
    extraEnv?: Record<string, string>;
    extraProbes?: CpuProbe[];
    /** A histogram of the workers' metrics to read as well, counted after the warm-up (`observed`). */
    histogram?: string;
  } = {},
): Promise<Drain & { peakRss: number; idleRss: number; window?: SentWindow; coldCpuPerEmail?: number; observed?: Histogram }> {
  await resetState(ctx);
  await ctx.queue.pause();
  await seedBacklog(ctx, warmup + count, attachment);
  const children: Child[] = [];
  const metricsUrls: string[] = [];
  try {
    for (let index = 0; index < workers; index += 1) {
      const port = await freePort();
      metricsUrls.push(`http://127.0.0.1:${port}/metrics`);
      children.push(await spawnWorker(ctx, index + 1, { METRICS_PORT: String(port), ...extraEnv }));
    }
    await sleep(500);
    const idleRss = Math.max(0, ...children.map((child) => rssBytes(child.pid)));
    const samplers = watchRss ? children.map((child) => (resetPeakRss(child.pid), sampleRss(child.pid))) : [];
    ctx.sink.reset();
    const scrape = (metric: string) => scrapeHistogram(metricsUrls, ctx.adminToken, metric).catch(() => undefined);
    let windowBefore: Histogram | undefined;
    let observedBefore: Histogram | undefined;
    const drain = await measureDrain(
      ctx,
      title,
      cpuProbes(ctx, [probe('worker', children), ...extraProbes]),
      warmup,
      count,
      () => ctx.queue.resume(),
      async () => {
        windowBefore = await scrape(SENT_WINDOW_METRIC);
        if (histogram) observedBefore = await scrape(histogram);
      },
    );
    const peakRss = Math.max(0, ...samplers.map((sampler, index) => Math.max(sampler.stop(), peakRssBytes(children[index]!.pid))));
    const perEmail = (cpu: Map<string, number>) =>
      ['worker', 'postgres', 'redis', ...extraProbes.map((extra) => extra.label)].reduce((sum, label) => sum + (cpu.get(label) ?? 0), 0);
    const result = {
      ...elapsed(ctx.sink, drain.t0, drain.from, drain.measured),
      drained: drain.drained,
      busy: drain.busy,
      peakRss,
      idleRss,
      cpuPerEmail: perEmail(drain.cpu),
      ...(drain.coldCpu ? { coldCpuPerEmail: perEmail(drain.coldCpu) } : {}),
    };
    // Let the last rows be marked sent before checking them.
    await sleep(300);
    // After a warm-up, only what the workers counted since its end: without that first scrape, no figure.
    const since = (after: Histogram | undefined, before: Histogram | undefined) => (warmup === 0 ? after : after && before && histogramSince(after, before));
    const sentWindow = since(await scrape(SENT_WINDOW_METRIC), windowBefore);
    const observed = histogram ? since(await scrape(histogram), observedBefore) : undefined;
    const window = sentWindow?.count
      ? { p50: quantileMs(sentWindow, 0.5), p99: quantileMs(sentWindow, 0.99), share: sentWindow.sum / (workers * WORKER_CONCURRENCY * result.seconds) }
      : undefined;
    const { rows: sent } = await ctx.sql.query<{ n: string }>(`select count(*) as n from submissions where email_status = 'sent'`);
    if (Number(sent[0]!.n) < warmup + result.count)
      ctx.notes.push(`delivery ${workers}w: ${warmup + result.count} emails at the sink but ${sent[0]!.n} rows marked sent`);
    return { ...result, window, ...(observed ? { observed } : {}) };
  } finally {
    for (const child of children) await stopReporting(ctx, child, title);
  }
}
