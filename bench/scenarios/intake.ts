// Scenarios 1 and 2, intake: the API under 64 keep-alive clients posting JSON, or multipart with
// three 100 KB files, against the floor API on the same services, in alternating repeats.
import { BENCH_MESSAGE, BENCH_SENDER } from '../floor/message.ts';
import { resetState, type Ctx } from '../support/context.ts';
import { combine, jsonBody, loadPhase, prime, type Summary } from '../support/load-phase.ts';
import { multipartRequest, type RequestSpec } from '../support/load.ts';
import { spawnApi, spawnFloor, stopReporting } from '../support/processes.ts';

export async function intakeJson(ctx: Ctx): Promise<void> {
  const body = jsonBody(ctx.accessKey);
  await intake(ctx, '1 Intake JSON', { path: '/api/contact-api/', contentType: 'application/json', body }, { path: '/json', contentType: 'application/json', body });
}

export async function intakeMultipart(ctx: Ctx): Promise<void> {
  const fields = [
    { name: 'access_key', value: ctx.accessKey },
    { name: 'email', value: BENCH_SENDER },
    { name: 'message', value: BENCH_MESSAGE },
  ];
  const files = [1, 2, 3].map((n) => ({ name: 'file', filename: `photo-${n}.jpg`, contentType: 'image/jpeg', size: 100 * 1024 }));
  const service = multipartRequest('/api/contact-api/', fields, files);
  await intake(ctx, '2 Intake multipart 3×100 KB', service, { ...service, path: '/multipart' });
}

function intakeRows(ctx: Ctx, scenario: string, service: Summary, floor: Summary): void {
  ctx.rows.push(
    { scenario, metric: 'throughput', service: service.rps, baseline: floor.rps, unit: 'req/s', target: { kind: 'ratio>=', value: 0.7 } },
    { scenario, metric: 'latency p50', service: service.p50, baseline: floor.p50, unit: 'ms' },
    { scenario, metric: 'latency p99', service: service.p99, baseline: floor.p99, unit: 'ms', target: { kind: 'ratio<=', value: 2 } },
  );
}

async function intake(ctx: Ctx, scenario: string, serviceRequest: RequestSpec, floorRequest: RequestSpec): Promise<void> {
  await resetState(ctx);
  const api = await spawnApi(ctx);
  const floor = await spawnFloor(ctx);
  const servicePhases = [];
  const floorPhases = [];
  try {
    await prime(ctx, floor.url, floorRequest);
    await prime(ctx, api.url, serviceRequest);
    await resetState(ctx);
    // Alternating repeats, so that a noisy neighbour hurts both sides alike.
    for (let repeat = 1; repeat <= ctx.S.repeats; repeat += 1) {
      floorPhases.push(await loadPhase(ctx, `${scenario} floor #${repeat}`, floor.child, floor.url, floorRequest));
      servicePhases.push(await loadPhase(ctx, `${scenario} service #${repeat}`, api.child, api.url, serviceRequest));
    }
  } finally {
    await stopReporting(ctx, api.child, scenario);
    await stopReporting(ctx, floor.child, scenario);
  }
  intakeRows(ctx, scenario, combine(servicePhases), combine(floorPhases));
}
