// Scenario 3, delivery: the workers draining a backlog against the baseline loop of pooled sends,
// for each worker count, with the CPU per email, the duplicate window and the scaling between counts.
import { WORKER_CONCURRENCY, type Ctx } from '../support/context.ts';
import { mailLoop, serviceDrain } from '../support/drains.ts';
import { percentile } from '../support/load.ts';

/** The middle one of the figures that exist (the lower middle for an even count); NaN when none does. */
const median = (values: number[]) =>
  percentile(
    values.filter(Number.isFinite).sort((a, b) => a - b),
    0.5,
  );

export async function delivery(ctx: Ctx): Promise<void> {
  const { S, rows, notes, log } = ctx;
  const scenario = `3 Delivery (${S.backlog.toLocaleString('en-US')} emails after ${S.deliveryWarmup.toLocaleString('en-US')} of warm-up)`;
  const results = new Map<number, { emailsPerSecond: number; busy: number }>();
  for (const workers of S.workerCounts) {
    // The CPU ratio (2 and more workers) moves between identical runs, mostly with the loop's own
    // CPU per email (docs/benchmarks.md#running-it): several alternating repeats, each side's
    // figures their median.
    const repeatCount = workers > 1 ? S.deliveryRepeats : 1;
    const repeats: Array<{ service: Awaited<ReturnType<typeof serviceDrain>>; baseline: Awaited<ReturnType<typeof mailLoop>> }> = [];
    for (let repeat = 1; repeat <= repeatCount; repeat += 1) {
      const suffix = repeatCount > 1 ? ` #${repeat}` : '';
      const baseline = await mailLoop(ctx, `3 baseline loop ${workers}×${WORKER_CONCURRENCY}${suffix}`, workers, S.backlog, { warmup: S.deliveryWarmup });
      log(
        `delivery baseline ${workers}x${WORKER_CONCURRENCY}${suffix}: ${(baseline.count / baseline.seconds).toFixed(0)} emails/s, cpu ${(baseline.busy * 100).toFixed(0)}%`,
      );
      const service = await serviceDrain(ctx, `3 service ${workers} worker(s)${suffix}`, workers, S.backlog, { warmup: S.deliveryWarmup });
      log(`delivery service ${workers} worker(s)${suffix}: ${(service.count / service.seconds).toFixed(0)} emails/s, cpu ${(service.busy * 100).toFixed(0)}%`);
      if (!service.drained)
        notes.push(
          `delivery ${workers} worker(s)${suffix}: only ${service.count} of ${S.backlog} emails within ${S.drainCapMs / 1000} s; throughput is over that time`,
        );
      if (!baseline.drained)
        notes.push(
          `delivery baseline ${workers}x${WORKER_CONCURRENCY}${suffix}: only ${baseline.count} of ${S.backlog} emails within ${S.drainCapMs / 1000} s`,
        );
      repeats.push({ service, baseline });
    }
    const service = (figure: (drain: (typeof repeats)[number]['service']) => number) => median(repeats.map((repeat) => figure(repeat.service)));
    const baseline = (figure: (drain: (typeof repeats)[number]['baseline']) => number) => median(repeats.map((repeat) => figure(repeat.baseline)));
    const emailsPerSecond = service((drain) => drain.count / drain.seconds);
    results.set(workers, { emailsPerSecond, busy: service((drain) => drain.busy) });
    if (repeatCount > 1) {
      const ratios = repeats.map((repeat) => (repeat.service.cpuPerEmail / repeat.baseline.cpuPerEmail).toFixed(2));
      notes.push(`delivery ${workers} workers: ${repeatCount} repeats, each row the median of each side's figures; CPU ratio per repeat ${ratios.join(', ')}`);
    }
    // The targets: throughput with 1 worker; with 2 and more the cores are saturated, and
    // the measure is the CPU per email of worker + PostgreSQL + Redis against the loop's.
    const label = `${workers} worker${workers > 1 ? 's' : ''}`;
    rows.push(
      {
        scenario,
        metric: `${label}: emails/s`,
        service: emailsPerSecond,
        baseline: baseline((drain) => drain.count / drain.seconds),
        unit: 'emails/s',
        ...(workers === 1 ? { target: { kind: 'ratio>=', value: 0.8 } as const } : {}),
      },
      { scenario, metric: `${label}: CPU busy`, service: service((drain) => drain.busy) * 100, baseline: baseline((drain) => drain.busy) * 100, unit: '%' },
      {
        scenario,
        metric: `${label}: CPU ms per email (+ pg, redis)`,
        service: service((drain) => drain.cpuPerEmail),
        baseline: baseline((drain) => drain.cpuPerEmail),
        unit: 'ms',
        ...(workers > 1 ? { target: { kind: 'ratio<=', value: 2 } as const } : {}),
      },
      // The same over the warm-up: fresh processes, their JIT compiler still at work.
      {
        scenario,
        metric: `${label}: the same, cold (warm-up)`,
        service: service((drain) => drain.coldCpuPerEmail ?? Number.NaN),
        baseline: baseline((drain) => drain.coldCpuPerEmail ?? Number.NaN),
        unit: 'ms',
      },
    );
    if (repeats.some((repeat) => repeat.service.window)) {
      // The floor loop records nothing after a send: these figures have no baseline.
      rows.push(
        { scenario, metric: `${label}: 250 → sent p50`, service: service((drain) => drain.window?.p50 ?? Number.NaN), baseline: Number.NaN, unit: 'ms' },
        { scenario, metric: `${label}: 250 → sent p99`, service: service((drain) => drain.window?.p99 ?? Number.NaN), baseline: Number.NaN, unit: 'ms' },
        {
          scenario,
          metric: `${label}: in-flight share in that window`,
          service: service((drain) => drain.window?.share ?? Number.NaN) * 100,
          baseline: Number.NaN,
          unit: '%',
          target: { kind: '<=', value: 0.1 },
        },
      );
    }
  }
  // Scaling: each worker count against the one before it, on the service.
  for (let index = 1; index < S.workerCounts.length; index += 1) {
    const fewer = S.workerCounts[index - 1]!;
    const more = S.workerCounts[index]!;
    const a = results.get(fewer)!;
    const b = results.get(more)!;
    // "Growing with workers until the CPU is full": more workers must deliver more while the
    // cores have room; once the larger count fills them, it must at least not deliver less;
    // when the smaller count had filled them already, there is nothing left to grow into.
    const fullBefore = a.busy >= 0.9;
    const fullAfter = b.busy >= 0.9;
    rows.push({
      scenario,
      metric: `scaling ${more} vs ${fewer} workers`,
      service: b.emailsPerSecond,
      baseline: a.emailsPerSecond,
      unit: 'emails/s',
      ...(fullBefore ? {} : { target: { kind: 'ratio>=', value: fullAfter ? 1 : 1.05 } as const }),
    });
    if (fullBefore) notes.push(`scaling ${more} vs ${fewer} workers: no target, all cores were already ${(a.busy * 100).toFixed(0)}% busy with ${fewer}`);
    else if (fullAfter)
      notes.push(
        `scaling ${more} vs ${fewer} workers: the cores filled up (${(a.busy * 100).toFixed(0)}% → ${(b.busy * 100).toFixed(0)}% busy), so the target is only "no less"`,
      );
  }
}
