// Scenario 4, end to end: from the API's 200 to the email at the sink, the service (API + worker)
// under the load of scenario 1 against the floor pipeline paced to the same arrival rate.
import { resetState, type Ctx } from '../support/context.ts';
import { probe } from '../support/cpu.ts';
import { jsonBody, loadPhase } from '../support/load-phase.ts';
import { now, percentile, type RequestSpec } from '../support/load.ts';
import { sleep } from '../support/proc.ts';
import { spawnApi, spawnFloor, spawnFloorWorker, spawnWorker, stopReporting } from '../support/processes.ts';

export async function endToEnd(ctx: Ctx): Promise<void> {
  const { S, rows, notes, log } = ctx;
  const scenario = '4 End to end (load of 1)';
  // The service under the 64 clients of scenario 1, then the floor pipeline (floor API + bare
  // worker) paced to the same arrival rate: with the same load, the figures compare.
  const measure = async (kind: 'service' | 'floor', maxRps?: number) => {
    await resetState(ctx);
    const target = kind === 'service' ? await spawnApi(ctx) : await spawnFloor(ctx);
    const worker = kind === 'service' ? await spawnWorker(ctx, 1) : await spawnFloorWorker(ctx);
    const answered = new Map<string, number>();
    try {
      ctx.sink.reset();
      const request: RequestSpec =
        kind === 'service'
          ? { path: '/api/contact-api/', contentType: 'application/json', body: jsonBody(ctx.accessKey) }
          : { path: '/json', contentType: 'application/json', body: jsonBody(ctx.accessKey) };
      const title = `4 ${kind} + 1 worker${maxRps ? ` at ${maxRps.toFixed(0)} req/s` : ''}`;
      const onMeasured = (body: string, at: number) => {
        const id = (JSON.parse(body) as { submission_id: string }).submission_id;
        answered.set(`submission-${id}`, at);
      };
      const load = await loadPhase(ctx, title, target.child, target.url, request, onMeasured, [probe('worker', [worker])], maxRps);
      // Wait (bounded) for the measured submissions to reach the sink.
      const waitUntil = Date.now() + S.drainCapMs;
      const arrived = () => {
        let n = 0;
        for (const arrival of ctx.sink.arrivals) if (answered.has(arrival.id)) n += 1;
        return n;
      };
      while (arrived() < answered.size && Date.now() < waitUntil) await sleep(200);
      const delays: number[] = [];
      for (const arrival of ctx.sink.arrivals) {
        const at = answered.get(arrival.id);
        if (at !== undefined) delays.push(arrival.at - at);
      }
      if (delays.length < answered.size) {
        // Not arrived by the cap: counted at the cap, so the percentiles are lower bounds.
        const missing = answered.size - delays.length;
        const waited = now() - Math.min(...answered.values());
        for (let n = 0; n < missing; n += 1) delays.push(waited);
        notes.push(
          `${title}: ${missing} of ${answered.size} emails had not arrived after ${S.drainCapMs / 1000} s; counted at that age, so its figures are lower bounds`,
        );
      }
      delays.sort((a, b) => a - b);
      return { p50: percentile(delays, 0.5), p99: percentile(delays, 0.99), rps: load.rps };
    } finally {
      await stopReporting(ctx, target.child, scenario);
      await stopReporting(ctx, worker, scenario);
    }
  };
  const service = await measure('service');
  const floor = await measure('floor', service.rps);
  log(`end to end: service p50 ${service.p50.toFixed(0)} p99 ${service.p99.toFixed(0)} ms; floor p50 ${floor.p50.toFixed(0)} p99 ${floor.p99.toFixed(0)} ms`);
  rows.push(
    { scenario, metric: 'intake while delivering', service: service.rps, baseline: floor.rps, unit: 'req/s' },
    { scenario, metric: '200 → sink p50', service: service.p50, baseline: floor.p50, unit: 'ms' },
    { scenario, metric: '200 → sink p99', service: service.p99, baseline: floor.p99, unit: 'ms' },
  );
}
