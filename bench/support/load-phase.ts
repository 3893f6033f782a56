// One measured load phase against an API or its floor (warm-up, then the measured window, with the
// CPU of every process recorded), and what the scenarios make of several such phases.
import { BENCH_MESSAGE, BENCH_SENDER } from '../floor/message.ts';
import { CLIENTS, MAX_REQUESTS, type Ctx } from './context.ts';
import { cpuProbes, cpuSnapshot, probe, recordCpu, roundTrips, type CpuProbe } from './cpu.ts';
import { percentile, runLoad, type LoadResult, type RequestSpec } from './load.ts';
import { busyShare, machineCpu, type Child } from './proc.ts';

export async function loadPhase(
  ctx: Ctx,
  title: string,
  target: Child,
  url: string,
  request: RequestSpec,
  onMeasured?: (body: string, at: number) => void,
  extra: CpuProbe[] = [],
  maxRps?: number,
  clients = CLIENTS,
): Promise<PhaseResult> {
  const { S } = ctx;
  const probes = cpuProbes(ctx, [probe(target.name === 'floor' ? 'floor' : 'api', [target]), ...extra]);
  const beforeMachine = machineCpu();
  let beforeCpu = cpuSnapshot(probes);
  let measuring = false;
  let tripsBefore: Promise<{ pg: number; redis: number }> | undefined;
  const switchTimer = setTimeout(() => {
    beforeCpu = cpuSnapshot(probes);
    tripsBefore = roundTrips(ctx);
    measuring = true;
  }, S.warmupMs);
  const result = await runLoad({
    url,
    clients,
    warmupMs: S.warmupMs,
    durationMs: S.measureMs,
    maxRequests: MAX_REQUESTS,
    request,
    ...(onMeasured ? { onMeasured } : {}),
    ...(maxRps ? { maxRps } : {}),
  });
  clearTimeout(switchTimer);
  const afterCpu = cpuSnapshot(probes);
  let cpu: Map<string, number> | undefined;
  // Both are set by the timer above, which the type checker does not follow.
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition
  if (measuring && tripsBefore) {
    const trips = { before: await tripsBefore, after: await roundTrips(ctx) };
    cpu = recordCpu(ctx, title, beforeCpu, afterCpu, result.completed, busyShare(beforeMachine, machineCpu()), trips);
  }
  if (result.errors) ctx.notes.push(`${title}: ${result.errors} failed requests (first: ${result.firstError})`);
  ctx.log(`${title}: ${result.rps.toFixed(0)} req/s, p50 ${result.p50.toFixed(1)} ms, p99 ${result.p99.toFixed(1)} ms, ${result.errors} errors`);
  return { ...result, cpu };
}

/** A phase's load figures, and the CPU ms per request of each process in its measured window. */
export type PhaseResult = LoadResult & { cpu: Map<string, number> | undefined };

/** Unmeasured load right after a process starts, so that its code is compiled before it is measured. */
export async function prime(ctx: Ctx, url: string, request: RequestSpec, clients = CLIENTS): Promise<void> {
  await runLoad({ url, clients, warmupMs: ctx.S.warmupMs, durationMs: 0, maxRequests: MAX_REQUESTS, request });
}

/** `apiCpuMs`: the API's CPU ms per request, the mean of the phases that measured it. */
export type Summary = { rps: number; p50: number; p99: number; apiCpuMs: number };

export function combine(phases: PhaseResult[]): Summary {
  const ok = phases.reduce((sum, phase) => sum + phase.ok, 0);
  const seconds = phases.reduce((sum, phase) => sum + phase.seconds, 0);
  const latencies = phases.flatMap((phase) => phase.latencies).sort((a, b) => a - b);
  const apiCpu = phases.flatMap((phase) => phase.cpu?.get('api') ?? []);
  const apiCpuMs = apiCpu.reduce((sum, ms) => sum + ms, 0) / apiCpu.length;
  return { rps: ok / seconds, p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99), apiCpuMs };
}

export const jsonBody = (accessKey: string) =>
  Buffer.from(JSON.stringify({ access_key: accessKey, email: BENCH_SENDER, message: BENCH_MESSAGE, name: 'Ada Lovelace', company: 'Analytical Engines Ltd' }));
