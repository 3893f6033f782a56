// Scenario 15, intake with traces: the API under scenario 1's load with OTEL_EXPORTER_OTLP_ENDPOINT
// set (its spans posted to a collector stand-in on loopback) against the same API with it unset, in
// alternating repeats. Unset is the baseline: no OpenTelemetry module is loaded then, and a request
// meets no tracing step, so "unset" against "no tracing code at all" differs by a check per enqueue,
// below what a run can tell apart; this shows what turning traces on costs instead.
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { freshPhase, resetState, type Ctx } from '../support/context.ts';
import { combine, jsonBody, loadPhase, prime, type PhaseResult } from '../support/load-phase.ts';
import type { RequestSpec } from '../support/load.ts';
import { spawnApi, stopReporting } from '../support/processes.ts';

const SCENARIO = '15 Intake JSON, traces exported (OTLP/HTTP to loopback) vs unset';

export async function tracing(ctx: Ctx): Promise<void> {
  const collector = await startCollector();
  const request: RequestSpec = { path: '/api/contact-api/', contentType: 'application/json', body: jsonBody(ctx.accessKey) };
  await resetState(ctx);
  const off = await spawnApi(ctx, 'api');
  const on = await spawnApi({ ...ctx, env: { ...ctx.env, OTEL_EXPORTER_OTLP_ENDPOINT: collector.url } }, 'api-traced');
  const sides = [
    { label: 'unset', api: off },
    { label: 'traced', api: on },
  ];
  const phases = sides.map((): PhaseResult[] => []);
  try {
    for (const side of sides) await prime(ctx, side.api.url, request);
    for (let repeat = 1; repeat <= ctx.S.repeats; repeat += 1) {
      for (const [index, side] of sides.entries()) {
        await freshPhase(ctx);
        phases[index]!.push(await loadPhase(ctx, `${SCENARIO} (${side.label}) #${repeat}`, side.api.child, side.api.url, request));
      }
    }
  } finally {
    await stopReporting(ctx, off.child, SCENARIO);
    await stopReporting(ctx, on.child, SCENARIO);
    await collector.close();
  }
  const [unset, traced] = phases.map(combine);
  if (collector.exports() === 0) ctx.notes.push(`${SCENARIO}: the collector received no spans`);
  ctx.rows.push(
    { scenario: SCENARIO, metric: 'throughput', service: traced!.rps, baseline: unset!.rps, unit: 'req/s' },
    { scenario: SCENARIO, metric: 'latency p99', service: traced!.p99, baseline: unset!.p99, unit: 'ms' },
    { scenario: SCENARIO, metric: 'API CPU per request', service: traced!.apiCpuMs * 1000, baseline: unset!.apiCpuMs * 1000, unit: 'µs' },
  );
}

/** A collector stand-in in the benchmark's process: reads each export and answers 200. */
async function startCollector(): Promise<{ url: string; exports: () => number; close: () => Promise<void> }> {
  let exports = 0;
  const server: Server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      exports += 1;
      response.writeHead(200, { 'Content-Type': 'application/json' }).end('{}');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    exports: () => exports,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
