// Scenario 5, memory: the API's RSS growth under many big uploads at once, and a worker's peak RSS
// draining emails with 5 MB attached from S3, each against its floor.
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { BENCH_SENDER } from '../floor/message.ts';
import { BUCKET, MB, resetState, type Ctx } from '../support/context.ts';
import { mailLoop, serviceDrain } from '../support/drains.ts';
import { uploadAtOnce } from '../support/load.ts';
import { peakRssBytes, resetPeakRss, rssBytes, sampleRss, sleep } from '../support/proc.ts';
import { spawnApi, spawnFloor, stopReporting } from '../support/processes.ts';

export async function memory(ctx: Ctx): Promise<void> {
  const { S, rows, notes, log } = ctx;
  const clients = S.uploadClients;
  const apiScenario = `5 Memory: API, ${clients}×10 files of 10 MB at once`;
  const fields = [
    { name: 'access_key', value: ctx.accessKey },
    { name: 'email', value: BENCH_SENDER },
    { name: 'message', value: 'Big files attached.' },
  ];
  const growth = async (kind: 'service' | 'floor') => {
    await resetState(ctx);
    const target = kind === 'service' ? await spawnApi(ctx, 'api-memory') : await spawnFloor(ctx);
    const route = kind === 'service' ? '/api/contact-api/' : '/multipart';
    try {
      // One small upload first, so that the code is loaded and the clients are connected.
      await uploadAtOnce(target.url, route, fields, 1, 1, 1024);
      await sleep(1_000);
      const before = rssBytes(target.child.pid);
      resetPeakRss(target.child.pid);
      const sampler = sampleRss(target.child.pid);
      const result = await uploadAtOnce(target.url, route, fields, clients, 10, 10 * MB);
      const peak = Math.max(sampler.stop(), peakRssBytes(target.child.pid));
      if (result.errors) notes.push(`5 ${kind} uploads: ${result.errors} failed (first: ${result.firstError})`);
      log(`memory ${kind}: RSS ${(before / MB).toFixed(0)} → peak ${(peak / MB).toFixed(0)} MB, ${result.ok} uploads in ${result.seconds.toFixed(1)} s`);
      return (peak - before) / MB;
    } finally {
      await stopReporting(ctx, target.child, apiScenario);
    }
  };
  const floorGrowth = await growth('floor');
  const serviceGrowth = await growth('service');
  rows.push({ scenario: apiScenario, metric: 'RSS growth', service: serviceGrowth, baseline: floorGrowth, unit: 'MB', target: { kind: '<=', value: 150 } });

  // A worker draining emails that each carry a 5 MB attachment streamed from S3.
  const count = S.bigEmails;
  const workerScenario = `5 Memory: worker, ${count.toLocaleString('en-US')} emails with 5 MB attached`;
  const size = 5 * MB;
  const key = 'bench/attachment-5mb.bin';
  await ctx.s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: Buffer.alloc(size, 7), ContentLength: size }));
  const baseline = await mailLoop(ctx, '5 baseline loop, 5 MB attached', 1, count, { extraEnv: { ATTACH_KEY: key }, watchRss: true });
  log(`memory baseline loop: peak RSS ${(baseline.peakRss / MB).toFixed(0)} MB, ${(baseline.count / baseline.seconds).toFixed(0)} emails/s`);
  const service = await serviceDrain(ctx, '5 worker, 5 MB attached', 1, count, { attachment: { key, size }, watchRss: true });
  log(
    `memory worker: idle ${(service.idleRss / MB).toFixed(0)} MB, peak RSS ${(service.peakRss / MB).toFixed(0)} MB, ${(service.count / service.seconds).toFixed(0)} emails/s`,
  );
  if (!service.drained) notes.push(`5 worker: only ${service.count} of ${count} emails within ${S.drainCapMs / 1000} s`);
  rows.push(
    {
      scenario: workerScenario,
      metric: 'peak RSS',
      service: service.peakRss / MB,
      baseline: baseline.peakRss / MB,
      unit: 'MB',
      target: { kind: '<=', value: 300 },
    },
    { scenario: workerScenario, metric: 'emails/s', service: service.count / service.seconds, baseline: baseline.count / baseline.seconds, unit: 'emails/s' },
  );
}
