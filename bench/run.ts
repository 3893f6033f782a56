// `npm run bench`: starts real services (PostgreSQL, redis-server, s3rver, an SMTP sink), runs
// bounded load against the service and against a floor baseline on the same services, and prints
// one table where every figure stands beside its baseline from this run. See README "Benchmarks".
//
//   npm run bench                 the full run (ends by itself within 15 minutes)
//   npm run bench -- --quick      short windows and small backlogs, for a smoke check
//   npm run bench -- --only=1,3   some scenarios only (1 JSON, 2 multipart, 3 delivery, 4 end to end, 5 memory, 6 growth,
//                                 7 workers SIGKILLed mid-backlog)
//   npm run bench -- --profile    also write V8 CPU profiles of the API, worker, floor and mail-loop processes to bench/profiles/
//                                 (summarise them with `node bench/profile-summary.ts bench/profiles/api-*.cpuprofile`)
//   npm run bench -- --workers=1,2,4,8          the worker counts of scenario 3
//   npm run bench -- --delivery-rounds=5        alternating loop/service rounds of scenario 3 with 2 and more workers (default 3, 1 with --quick)
//   npm run bench -- --sink-delay=200          the SMTP sink's delay per message (default 50 ms)
//   npm run bench -- --node-flags="--max-semi-space-size=8"   Node flags for every process under test
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import type { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import pg from 'pg';
import { deployedNodeFlags, startScriptFlags } from '../src/local/deployed-flags.ts';
import { LOCAL_S3_CREDENTIALS, startPostgres, startRedis } from '../src/local/services.ts';
import { createOrm, migrate } from '../src/shared/db/orm.ts';
import { generateKey } from '../src/shared/keys.ts';
import { createKeyVault } from '../src/shared/secrets.ts';
import { createDeliveryQueue, submissionJob, type DeliveryJob } from '../src/shared/queue.ts';
import { BENCH_MESSAGE, BENCH_OWNER, BENCH_SENDER, MAIL_FROM } from './floor/message.ts';
import { clientAddress, multipartRequest, now, percentile, runLoad, uploadAtOnce, type LoadResult, type RequestSpec } from './support/load.ts';
import {
  busyShare,
  childPids,
  cpuMs,
  killAllNow,
  machineCpu,
  peakRssBytes,
  resetPeakRss,
  ROOT,
  rssBytes,
  sampleRss,
  sleep,
  spawnNode,
  stopAll,
  track,
  waitForMessage,
  type Child,
} from './support/proc.ts';
import { renderTable, met, type Row } from './support/report.ts';
import { startSink, type Arrival, type Sink } from './support/sink.ts';
import { freePort, histogramSince, quantileMs, scrapeSentWindow } from './support/sent-window.ts';

// ---------------------------------------------------------------- settings

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const profile = args.includes('--profile');
const option = (name: string) => args.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3);
const only = option('only')?.split(',').map(Number);
const workerCounts = option('workers')?.split(',').map(Number);
const nodeFlags = option('node-flags')?.split(/\s+/).filter(Boolean) ?? [];
const runs = (scenario: number) => !only || only.includes(scenario);

const S = quick
  ? { warmupMs: 1_000, measureMs: 3_000, rounds: 1, backlog: 1_000, deliveryWarmup: 1_000, deliveryRounds: 1, workerCounts: [1, 2], uploadClients: 5, bigEmails: 100, growthRows: 100_000, drainCapMs: 60_000, kills: 4 }
  : { warmupMs: 3_000, measureMs: 6_000, rounds: 2, backlog: 5_000, deliveryWarmup: 5_000, deliveryRounds: 3, workerCounts: [1, 2, 4], uploadClients: 20, bigEmails: 1_000, growthRows: 1_000_000, drainCapMs: 90_000, kills: 12 };
if (workerCounts) S.workerCounts = workerCounts;
const deliveryRounds = option('delivery-rounds');
if (deliveryRounds) S.deliveryRounds = Math.max(1, Number(deliveryRounds) || 1);
const CLIENTS = 64;
const MAX_REQUESTS = 300_000; // per load phase, beside the time bound
const WORKER_CONCURRENCY = 50;
const SINK_DELAY_MS = Number(option('sink-delay') ?? 50);
const DEADLINE_MS = 13 * 60_000; // the whole run, services included; stopping takes the rest of the 15 minutes at most
const QUEUE_PREFIX = '{bench}';
const FLOOR_PREFIX = '{floor}';
const BUCKET = 'cfs-bench';
const MB = 1024 * 1024;
const BENCH_ADMIN_TOKEN = randomBytes(24).toString('hex');

const started = Date.now();
const rows: Row[] = [];
const notes: string[] = [];
const log = (message: string) => process.stderr.write(`[bench ${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s] ${message}\n`);

// ---------------------------------------------------------------- lifecycle

let finishing = false;
async function finish(code: number): Promise<never> {
  if (finishing) await new Promise(() => undefined);
  finishing = true;
  await stopAll();
  process.exit(code);
}
process.on('SIGINT', () => {
  log('interrupted: stopping everything');
  void finish(130);
});
process.on('SIGTERM', () => void finish(143));
process.on('exit', killAllNow);
const deadline = setTimeout(() => {
  log(`hard deadline of ${DEADLINE_MS / 60_000} minutes reached: stopping everything`);
  printReport(true);
  void finish(1);
}, DEADLINE_MS);
deadline.unref();

// ---------------------------------------------------------------- services

const dir = await mkdtemp(path.join(os.tmpdir(), 'cfs-bench-'));
track({ name: 'temp dir', stop: () => rm(dir, { recursive: true, force: true }) });
const profileDir = path.join(ROOT, 'bench', 'profiles');
if (profile) await mkdir(profileDir, { recursive: true });

type Ctx = {
  env: Record<string, string>;
  sql: pg.Pool;
  redis: Redis;
  queue: Queue<DeliveryJob>;
  sink: Sink;
  keyId: string;
  accessKey: string;
  postgresPid: () => number;
  redisPid: number;
  s3Pid: number;
  s3: S3Client;
};

async function startServices(): Promise<Ctx> {
  log('starting PostgreSQL, Redis, S3 and the SMTP sink');
  const postgres = await startPostgres({ dir: path.join(dir, 'postgres'), persistent: false, database: 'contact_form' });
  track({ name: 'postgres', stop: postgres.stop });
  const redisService = await startRedis();
  track({ name: 'redis', stop: redisService.stop, pid: redisService.child.pid });
  const s3Child = await spawnNode({
    name: 's3rver',
    script: 'bench/support/s3-process.ts',
    env: { S3_DIR: path.join(dir, 's3'), S3_BUCKET: BUCKET },
    ipc: true,
  });
  const { url: s3Url } = await waitForMessage<{ type: 'ready'; url: string }>(s3Child, 'ready');
  const sink = await startSink(SINK_DELAY_MS);

  // The key is made by the service's own code, so the benchmark follows the schema as it changes.
  const secret = randomBytes(32).toString('base64url');
  const orm = await createOrm(postgres.url, 1);
  let accessKey: string;
  let keyId: string;
  try {
    await migrate(orm);
    const created = await generateKey(orm.em.fork(), createKeyVault(secret), { email: BENCH_OWNER, emailsPerHour: 1_000 });
    accessKey = created.keyValue;
    keyId = created.key.id;
  } finally {
    await orm.close();
  }
  const sql = new pg.Pool({ connectionString: postgres.url, max: 4 });
  track({ name: 'sql pool', stop: () => sql.end() });
  // The key's own email is not part of any scenario.
  await sql.query('delete from key_emails');
  // The usual case: a mailbox that confirmed it wants the mail (README "Recipient consent"). An
  // unconfirmed one pays an allowance upsert in a transaction per request and, past
  // UNCONFIRMED_EMAILS_PER_HOUR, holds the submissions without enqueueing them.
  await sql.query(
    `insert into recipients (mailbox, confirmed_at) values ((select mailbox from verification_keys where id = $1), now())`,
    [keyId],
  );
  const redis = new Redis(redisService.url, { maxRetriesPerRequest: null });
  track({ name: 'redis client', stop: async () => void redis.disconnect() });
  const queue = createDeliveryQueue(redis, { QUEUE_PREFIX });
  track({ name: 'queue', stop: () => queue.close() });
  const s3 = new S3Client({
    region: 'us-east-1',
    endpoint: s3Url,
    forcePathStyle: true,
    credentials: LOCAL_S3_CREDENTIALS,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  track({ name: 's3 client', stop: async () => s3.destroy() });

  const postmasterPid = Number(readFileSync(path.join(dir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
  return {
    env: {
      HOST: '127.0.0.1',
      PORT: '0',
      DATABASE_URL: postgres.url,
      REDIS_URL: redisService.url,
      S3_ENDPOINT: s3Url,
      S3_BUCKET: BUCKET,
      S3_ACCESS_KEY_ID: LOCAL_S3_CREDENTIALS.accessKeyId,
      S3_SECRET_ACCESS_KEY: LOCAL_S3_CREDENTIALS.secretAccessKey,
      SMTP_URL: sink.url,
      MAIL_FROM,
      QUEUE_PREFIX,
      // The limiter runs on every request (one Redis script each); each client has its own
      // address, and the ceiling is high enough that nobody is refused.
      RATE_LIMIT_MAX: '1000000',
      // Every accepted file counts against the key's quota, and nothing is deleted during a run:
      // at 250 req/s × 300 KB the default 1 GB is full within the second round of scenario 2.
      KEY_STORAGE_QUOTA_MB: '1000000',
      WORKER_CONCURRENCY: String(WORKER_CONCURRENCY),
      SECRET: secret,
      // A worker serves its metrics (scenario 3's duplicate window) only with the operator token.
      ADMIN_TOKEN: BENCH_ADMIN_TOKEN,
      LOG_LEVEL: 'info',
    },
    sql,
    redis,
    queue,
    sink,
    keyId,
    accessKey,
    postgresPid: () => postmasterPid,
    redisPid: redisService.child.pid!,
    s3Pid: s3Child.pid,
    s3,
  };
}

async function machineLine(ctx: Ctx): Promise<string> {
  const cpus = os.cpus();
  const { rows: pgRows } = await ctx.sql.query<{ server_version: string }>('show server_version');
  const info = await ctx.redis.info('server');
  const redisVersion = /redis_version:(\S+)/.exec(info)?.[1] ?? '?';
  return (
    `Machine: ${cpus.length} cores (${cpus[0]?.model.trim() ?? '?'}), ${(os.totalmem() / 1024 ** 3).toFixed(0)} GB RAM, ` +
    `load average ${os.loadavg()[0]!.toFixed(2)} at start; Node ${process.versions.node}, ` +
    `PostgreSQL ${pgRows[0]!.server_version}, Redis ${redisVersion}`
  );
}

// ---------------------------------------------------------------- processes under test

/** Node flags of a process under test: --node-flags, and a CPU profile with --profile. */
const flagsFor = (name: string, deployed: string[] = []) => [
  ...deployed,
  ...nodeFlags,
  ...(profile ? ['--cpu-prof', '--cpu-prof-dir', profileDir, '--cpu-prof-name', `${name}-${Date.now()}.cpuprofile`] : []),
];

async function spawnApi(ctx: Ctx, name = 'api'): Promise<{ child: Child; url: string }> {
  const child = await spawnNode({
    name,
    script: 'src/api/main.ts',
    env: ctx.env,
    readyPattern: /api listening/,
    nodeArgs: flagsFor(name, deployedNodeFlags('start:api')),
  });
  const port = /"port":(\d+)/.exec(child.output())?.[1];
  const url = `http://127.0.0.1:${port}`;
  // Listening comes before Redis is connected: wait until every dependency answers.
  const until = Date.now() + 20_000;
  while (!(await fetch(`${url}/readyz`).then((response) => response.ok, () => false))) {
    if (Date.now() > until) throw new Error(`${name} never became ready:\n${child.output()}`);
    await sleep(100);
  }
  return { child, url };
}

async function spawnFloor(ctx: Ctx): Promise<{ child: Child; url: string }> {
  const child = await spawnNode({
    name: 'floor',
    script: 'bench/floor/api.ts',
    env: { ...ctx.env, QUEUE_PREFIX: FLOOR_PREFIX, FLOOR_KEY_ID: ctx.keyId },
    readyPattern: /floor listening \d+/,
    nodeArgs: flagsFor('floor'),
  });
  const port = /floor listening (\d+)/.exec(child.output())?.[1];
  return { child, url: `http://127.0.0.1:${port}` };
}

function spawnWorker(ctx: Ctx, index: number, env: Record<string, string> = {}): Promise<Child> {
  return spawnNode({
    name: `worker-${index}`,
    script: 'src/workers/main.ts',
    env: { ...ctx.env, ...env },
    readyPattern: /worker ready/,
    nodeArgs: flagsFor(`worker-${index}`, deployedNodeFlags('start:worker')),
  });
}

function spawnFloorWorker(ctx: Ctx): Promise<Child> {
  return spawnNode({
    name: 'floor-worker',
    script: 'bench/floor/worker.ts',
    env: { ...ctx.env, QUEUE_PREFIX: FLOOR_PREFIX, WORKER_CONCURRENCY: String(WORKER_CONCURRENCY) },
    readyPattern: /floor worker ready/,
    nodeArgs: flagsFor('floor-worker'),
  });
}

/** Stops a process under test, noting the warnings and errors it logged. */
async function stopReporting(child: Child, context: string): Promise<void> {
  await child.stop();
  const problems = child.problems();
  if (problems) notes.push(`${context}: ${child.name} logged ${problems.count} warning(s)/error(s), the first: ${problems.first}`);
}

/** Empties the tables the scenarios fill and every Redis key (no worker may be running). */
async function resetState(ctx: Ctx): Promise<void> {
  await ctx.sql.query('truncate submissions, attachments, webhook_deliveries');
  await ctx.redis.flushall();
}

// ---------------------------------------------------------------- CPU accounting

/** `reapedBy`: a parent whose own CPU time and that of its exited children count too (see cpuMs). */
type CpuProbe = { label: string; pids: () => number[]; reapedBy?: () => number };

/** The processes under test first, then the shared services and the benchmark process itself. */
function cpuProbes(ctx: Ctx, own: CpuProbe[]): CpuProbe[] {
  return [
    ...own,
    // The postmaster with its exited children: backends and autovacuum workers come and go, and one
    // that exited within a window took its CPU time out of a sum over the live children only.
    { label: 'postgres', pids: () => childPids(ctx.postgresPid()), reapedBy: () => ctx.postgresPid() },
    { label: 'redis', pids: () => [ctx.redisPid] },
    { label: 's3', pids: () => [ctx.s3Pid] },
    { label: 'sink', pids: () => [ctx.sink.child.pid] },
    { label: 'bench', pids: () => [process.pid] },
  ];
}

const probe = (label: string, children: Child[]): CpuProbe => ({ label, pids: () => children.map((child) => child.pid) });

function cpuSnapshot(probes: CpuProbe[]): Map<string, number> {
  return new Map(
    probes.map((probe) => {
      const parent = probe.reapedBy?.();
      return [probe.label, probe.pids().reduce((sum, pid) => sum + cpuMs(pid), parent === undefined ? 0 : cpuMs(parent, { exitedChildren: true }))];
    }),
  );
}

/** Transactions committed in PostgreSQL (each autocommit statement is one) and Redis commands run. */
async function roundTrips(ctx: Ctx): Promise<{ pg: number; redis: number }> {
  const { rows: stat } = await ctx.sql.query<{ n: string }>(
    `select xact_commit + xact_rollback as n from pg_stat_database where datname = current_database()`,
  );
  const info = await ctx.redis.info('stats');
  return { pg: Number(stat[0]?.n ?? 0), redis: Number(/total_commands_processed:(\d+)/.exec(info)?.[1] ?? 0) };
}

const cpuTable: string[] = [];
/** Records a CPU line for the table below the results; returns the CPU ms per unit by process label. */
function recordCpu(title: string, before: Map<string, number>, after: Map<string, number>, units: number, busy: number, trips?: { before: { pg: number; redis: number }; after: { pg: number; redis: number } }): Map<string, number> {
  const perUnitByLabel = new Map([...after].map(([label, ms]) => [label, (ms - (before.get(label) ?? 0)) / Math.max(1, units)] as const));
  const parts = [...perUnitByLabel]
    .filter(([, perUnit]) => perUnit >= 0.005)
    .map(([label, perUnit]) => `${label} ${perUnit.toFixed(2)}`);
  const perUnit = (value: number) => (value / Math.max(1, units)).toFixed(1);
  const tripText = trips
    ? `; pg xacts ${perUnit(trips.after.pg - trips.before.pg)}, redis cmds ${perUnit(trips.after.redis - trips.before.redis)}`
    : '';
  cpuTable.push(`${title.padEnd(34)} ${parts.join(', ')}  (all cores ${(busy * 100).toFixed(0)}% busy${tripText})`);
  return perUnitByLabel;
}

// ---------------------------------------------------------------- load phases

async function loadPhase(ctx: Ctx, title: string, target: Child, url: string, request: RequestSpec, onMeasured?: (body: string, at: number) => void, extra: CpuProbe[] = [], maxRps?: number): Promise<LoadResult> {
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
    clients: CLIENTS,
    warmupMs: S.warmupMs,
    durationMs: S.measureMs,
    maxRequests: MAX_REQUESTS,
    request,
    ...(onMeasured ? { onMeasured } : {}),
    ...(maxRps ? { maxRps } : {}),
  });
  clearTimeout(switchTimer);
  const afterCpu = cpuSnapshot(probes);
  if (measuring && tripsBefore) {
    const trips = { before: await tripsBefore, after: await roundTrips(ctx) };
    recordCpu(title, beforeCpu, afterCpu, result.completed, busyShare(beforeMachine, machineCpu()), trips);
  }
  if (result.errors) notes.push(`${title}: ${result.errors} failed requests (first: ${result.firstError})`);
  log(`${title}: ${result.rps.toFixed(0)} req/s, p50 ${result.p50.toFixed(1)} ms, p99 ${result.p99.toFixed(1)} ms, ${result.errors} errors`);
  return result;
}

/** Unmeasured load right after a process starts, so that its code is compiled before it is measured. */
async function prime(url: string, request: RequestSpec): Promise<void> {
  await runLoad({ url, clients: CLIENTS, warmupMs: S.warmupMs, durationMs: 0, maxRequests: MAX_REQUESTS, request });
}

type Summary = { rps: number; p50: number; p99: number };

function combine(phases: LoadResult[]): Summary {
  const ok = phases.reduce((sum, phase) => sum + phase.ok, 0);
  const seconds = phases.reduce((sum, phase) => sum + phase.seconds, 0);
  const latencies = phases.flatMap((phase) => phase.latencies).sort((a, b) => a - b);
  return { rps: ok / seconds, p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99) };
}

function intakeRows(scenario: string, service: Summary, floor: Summary): void {
  rows.push(
    { scenario, metric: 'throughput', service: service.rps, baseline: floor.rps, unit: 'req/s', target: { kind: 'ratio>=', value: 0.7 } },
    { scenario, metric: 'latency p50', service: service.p50, baseline: floor.p50, unit: 'ms' },
    { scenario, metric: 'latency p99', service: service.p99, baseline: floor.p99, unit: 'ms', target: { kind: 'ratio<=', value: 2 } },
  );
}

const jsonBody = (accessKey: string) =>
  Buffer.from(
    JSON.stringify({ access_key: accessKey, email: BENCH_SENDER, message: BENCH_MESSAGE, name: 'Ada Lovelace', company: 'Analytical Engines Ltd' }),
  );

// ---------------------------------------------------------------- 1, 2: intake

async function intake(ctx: Ctx, scenario: string, serviceRequest: RequestSpec, floorRequest: RequestSpec): Promise<void> {
  await resetState(ctx);
  const api = await spawnApi(ctx);
  const floor = await spawnFloor(ctx);
  const servicePhases = [];
  const floorPhases = [];
  try {
    await prime(floor.url, floorRequest);
    await prime(api.url, serviceRequest);
    await resetState(ctx);
    // Alternating rounds, so that a noisy neighbour hurts both sides alike.
    for (let round = 1; round <= S.rounds; round += 1) {
      floorPhases.push(await loadPhase(ctx, `${scenario} floor #${round}`, floor.child, floor.url, floorRequest));
      servicePhases.push(await loadPhase(ctx, `${scenario} service #${round}`, api.child, api.url, serviceRequest));
    }
  } finally {
    await stopReporting(api.child, scenario);
    await stopReporting(floor.child, scenario);
  }
  intakeRows(scenario, combine(servicePhases), combine(floorPhases));
}

// ---------------------------------------------------------------- 3: delivery

async function seedBacklog(ctx: Ctx, count: number, attachmentKey?: { key: string; size: number }): Promise<string[]> {
  const { rows: seeded } = await ctx.sql.query<{ id: string }>(
    `insert into submissions (id, key_id, email, message, subject, custom_fields, client_ip)
     select gen_random_uuid(), $1, $2, $3, $4, $5, '127.0.0.1' from generate_series(1, $6::int)
     returning id`,
    [ctx.keyId, BENCH_SENDER, BENCH_MESSAGE, `New contact form submission from ${BENCH_SENDER}`, JSON.stringify([['name', 'Ada Lovelace'], ['company', 'Analytical Engines Ltd']]), count],
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
    await ctx.queue.addBulk(ids.slice(start, start + 1_000).map((id) => {
      const job = submissionJob(id);
      return { name: job.name, data: job.data, opts: { jobId: id } };
    }));
  }
  return ids;
}

/** A drain's figures; `cpuPerEmail`: CPU ms per email of the loop, or of worker + PostgreSQL + Redis. */
type Drain = { count: number; seconds: number; busy: number; drained: boolean; cpuPerEmail: number };

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
  const deadline = Date.now() + S.drainCapMs;
  const cold = await mark(ctx, probes);
  await start();
  let warm = cold;
  let coldCpu: Map<string, number> | undefined;
  if (warmup > 0) {
    await ctx.sink.waitFor(warmup, deadline);
    warm = await mark(ctx, probes);
    await onWarm?.();
    coldCpu = recordCpu(`${title}, warm-up`, cold.cpu, warm.cpu, warm.arrived - cold.arrived, busyShare(cold.machine, warm.machine), { before: cold.trips, after: warm.trips });
  }
  const drained = await ctx.sink.waitFor(warmup + count, deadline);
  const end = await mark(ctx, probes);
  const busy = busyShare(warm.machine, end.machine);
  const cpu = recordCpu(title, warm.cpu, end.cpu, end.arrived - warm.arrived, busy, { before: warm.trips, after: end.trips });
  return { drained, busy, cpu, coldCpu, t0: warm.at, from: warm.arrived, measured: Math.min(count, warmup + count - warm.arrived) };
}

/** What a drain may add: the RSS watched, emails of warm-up before the `total` measured. */
type DrainOptions = { watchRss?: boolean; warmup?: number };

/** Runs the baseline loop: `processes` processes sharing the messages, 50 at a time each. */
async function mailLoop(
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
        nodeArgs: flagsFor(`mail-loop-${index}`),
      });
      await waitForMessage(child, 'ready');
      children.push(child);
    }
    const samplers = watchRss ? children.map((child) => (resetPeakRss(child.pid), sampleRss(child.pid))) : [];
    ctx.sink.reset();
    const done = children.map((child) => waitForMessage<{ type: 'done'; failed: number; firstError?: string }>(child, 'done', S.drainCapMs + 5_000));
    const drain = await measureDrain(ctx, title, cpuProbes(ctx, [probe('loop', children)]), warmup, total, () => {
      for (const child of children) child.child.send({ type: 'go' });
    });
    const peakRss = Math.max(0, ...samplers.map((sampler, index) => Math.max(sampler.stop(), peakRssBytes(children[index]!.pid))));
    for (const result of await Promise.allSettled(done)) {
      if (result.status === 'fulfilled' && result.value.failed) notes.push(`baseline loop: ${result.value.failed} sends failed (${result.value.firstError})`);
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
type SentWindow = { p50: number; p99: number; share: number };

async function serviceDrain(
  ctx: Ctx,
  title: string,
  workers: number,
  count: number,
  { watchRss = false, warmup = 0, attachment }: DrainOptions & { attachment?: { key: string; size: number } } = {},
): Promise<Drain & { peakRss: number; idleRss: number; window?: SentWindow; coldCpuPerEmail?: number }> {
  await resetState(ctx);
  await ctx.queue.pause();
  await seedBacklog(ctx, warmup + count, attachment);
  const children: Child[] = [];
  const metricsUrls: string[] = [];
  try {
    for (let index = 0; index < workers; index += 1) {
      const port = await freePort();
      metricsUrls.push(`http://127.0.0.1:${port}/metrics`);
      children.push(await spawnWorker(ctx, index + 1, { METRICS_PORT: String(port) }));
    }
    await sleep(500);
    const idleRss = Math.max(0, ...children.map((child) => rssBytes(child.pid)));
    const samplers = watchRss ? children.map((child) => (resetPeakRss(child.pid), sampleRss(child.pid))) : [];
    ctx.sink.reset();
    const scrape = () => scrapeSentWindow(metricsUrls, BENCH_ADMIN_TOKEN).catch(() => undefined);
    let windowBefore: Awaited<ReturnType<typeof scrape>>;
    const drain = await measureDrain(
      ctx,
      title,
      cpuProbes(ctx, [probe('worker', children)]),
      warmup,
      count,
      () => ctx.queue.resume(),
      async () => {
        windowBefore = await scrape();
      },
    );
    const peakRss = Math.max(0, ...samplers.map((sampler, index) => Math.max(sampler.stop(), peakRssBytes(children[index]!.pid))));
    const perEmail = (cpu: Map<string, number>) => ['worker', 'postgres', 'redis'].reduce((sum, label) => sum + (cpu.get(label) ?? 0), 0);
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
    const scraped = await scrape();
    // After a warm-up, only what the workers counted since its end: without that first scrape, no figure.
    const histogram = warmup === 0 ? scraped : scraped && windowBefore && histogramSince(scraped, windowBefore);
    const window = histogram?.count
      ? { p50: quantileMs(histogram, 0.5), p99: quantileMs(histogram, 0.99), share: histogram.sum / (workers * WORKER_CONCURRENCY * result.seconds) }
      : undefined;
    const { rows: sent } = await ctx.sql.query<{ n: string }>(`select count(*) as n from submissions where email_status = 'sent'`);
    if (Number(sent[0]!.n) < warmup + result.count) notes.push(`delivery ${workers}w: ${warmup + result.count} emails at the sink but ${sent[0]!.n} rows marked sent`);
    return { ...result, window };
  } finally {
    for (const child of children) await stopReporting(child, title);
  }
}

/** The middle one of the figures that exist (the lower middle for an even count); NaN when none does. */
const median = (values: number[]) => percentile(values.filter(Number.isFinite).sort((a, b) => a - b), 0.5);

async function delivery(ctx: Ctx): Promise<void> {
  const scenario = `3 Delivery (${S.backlog.toLocaleString('en-US')} emails after ${S.deliveryWarmup.toLocaleString('en-US')} of warm-up)`;
  const results = new Map<number, { emailsPerSecond: number; busy: number }>();
  for (const workers of S.workerCounts) {
    // The CPU ratio (2 and more workers) moves by ±0.2 between identical runs, mostly with the
    // loop's own CPU per email: several alternating rounds, each side's figures their median.
    const roundCount = workers > 1 ? S.deliveryRounds : 1;
    const rounds: Array<{ service: Awaited<ReturnType<typeof serviceDrain>>; baseline: Awaited<ReturnType<typeof mailLoop>> }> = [];
    for (let round = 1; round <= roundCount; round += 1) {
      const suffix = roundCount > 1 ? ` #${round}` : '';
      const baseline = await mailLoop(ctx, `3 baseline loop ${workers}×${WORKER_CONCURRENCY}${suffix}`, workers, S.backlog, { warmup: S.deliveryWarmup });
      log(`delivery baseline ${workers}x${WORKER_CONCURRENCY}${suffix}: ${(baseline.count / baseline.seconds).toFixed(0)} emails/s, cpu ${(baseline.busy * 100).toFixed(0)}%`);
      const service = await serviceDrain(ctx, `3 service ${workers} worker(s)${suffix}`, workers, S.backlog, { warmup: S.deliveryWarmup });
      log(`delivery service ${workers} worker(s)${suffix}: ${(service.count / service.seconds).toFixed(0)} emails/s, cpu ${(service.busy * 100).toFixed(0)}%`);
      if (!service.drained) notes.push(`delivery ${workers} worker(s)${suffix}: only ${service.count} of ${S.backlog} emails within ${S.drainCapMs / 1000} s; throughput is over that time`);
      if (!baseline.drained) notes.push(`delivery baseline ${workers}x${WORKER_CONCURRENCY}${suffix}: only ${baseline.count} of ${S.backlog} emails within ${S.drainCapMs / 1000} s`);
      rounds.push({ service, baseline });
    }
    const service = (figure: (drain: (typeof rounds)[number]['service']) => number) => median(rounds.map((round) => figure(round.service)));
    const baseline = (figure: (drain: (typeof rounds)[number]['baseline']) => number) => median(rounds.map((round) => figure(round.baseline)));
    const emailsPerSecond = service((drain) => drain.count / drain.seconds);
    results.set(workers, { emailsPerSecond, busy: service((drain) => drain.busy) });
    if (roundCount > 1) {
      const ratios = rounds.map((round) => (round.service.cpuPerEmail / round.baseline.cpuPerEmail).toFixed(2));
      notes.push(`delivery ${workers} workers: ${roundCount} rounds, each row the median of each side's figures; CPU ratio per round ${ratios.join(', ')}`);
    }
    // Issue 15's targets: throughput with 1 worker; with 2 and more the cores are saturated, and
    // the measure is the CPU per email of worker + PostgreSQL + Redis against the loop's.
    const label = `${workers} worker${workers > 1 ? 's' : ''}`;
    rows.push(
      { scenario, metric: `${label}: emails/s`, service: emailsPerSecond, baseline: baseline((drain) => drain.count / drain.seconds), unit: 'emails/s', ...(workers === 1 ? { target: { kind: 'ratio>=', value: 0.8 } as const } : {}) },
      { scenario, metric: `${label}: CPU busy`, service: service((drain) => drain.busy) * 100, baseline: baseline((drain) => drain.busy) * 100, unit: '%' },
      { scenario, metric: `${label}: CPU ms per email (+ pg, redis)`, service: service((drain) => drain.cpuPerEmail), baseline: baseline((drain) => drain.cpuPerEmail), unit: 'ms', ...(workers > 1 ? { target: { kind: 'ratio<=', value: 2 } as const } : {}) },
      // The same over the warm-up: fresh processes, their JIT compiler still at work.
      { scenario, metric: `${label}: the same, cold (warm-up)`, service: service((drain) => drain.coldCpuPerEmail ?? Number.NaN), baseline: baseline((drain) => drain.coldCpuPerEmail ?? Number.NaN), unit: 'ms' },
    );
    if (rounds.some((round) => round.service.window)) {
      // The floor loop records nothing after a send: these figures have no baseline.
      rows.push(
        { scenario, metric: `${label}: 250 → sent p50`, service: service((drain) => drain.window?.p50 ?? Number.NaN), baseline: Number.NaN, unit: 'ms' },
        { scenario, metric: `${label}: 250 → sent p99`, service: service((drain) => drain.window?.p99 ?? Number.NaN), baseline: Number.NaN, unit: 'ms' },
        { scenario, metric: `${label}: in-flight share in that window`, service: service((drain) => drain.window?.share ?? Number.NaN) * 100, baseline: Number.NaN, unit: '%', target: { kind: '<=', value: 0.1 } },
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
    else if (fullAfter) notes.push(`scaling ${more} vs ${fewer} workers: the cores filled up (${(a.busy * 100).toFixed(0)}% → ${(b.busy * 100).toFixed(0)}% busy), so the target is only "no less"`);
  }
}

// ---------------------------------------------------------------- 4: end to end

async function endToEnd(ctx: Ctx): Promise<void> {
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
        notes.push(`${title}: ${missing} of ${answered.size} emails had not arrived after ${S.drainCapMs / 1000} s; counted at that age, so its figures are lower bounds`);
      }
      delays.sort((a, b) => a - b);
      return { p50: percentile(delays, 0.5), p99: percentile(delays, 0.99), rps: load.rps };
    } finally {
      await stopReporting(target.child, scenario);
      await stopReporting(worker, scenario);
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

// ---------------------------------------------------------------- 5: memory

async function memory(ctx: Ctx): Promise<void> {
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
      await stopReporting(target.child, apiScenario);
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
  log(`memory worker: idle ${(service.idleRss / MB).toFixed(0)} MB, peak RSS ${(service.peakRss / MB).toFixed(0)} MB, ${(service.count / service.seconds).toFixed(0)} emails/s`);
  if (!service.drained) notes.push(`5 worker: only ${service.count} of ${count} emails within ${S.drainCapMs / 1000} s`);
  rows.push(
    { scenario: workerScenario, metric: 'peak RSS', service: service.peakRss / MB, baseline: baseline.peakRss / MB, unit: 'MB', target: { kind: '<=', value: 300 } },
    { scenario: workerScenario, metric: 'emails/s', service: service.count / service.seconds, baseline: baseline.count / baseline.seconds, unit: 'emails/s' },
  );
}

// ---------------------------------------------------------------- 6: growth

async function growth(ctx: Ctx): Promise<void> {
  const scenario = `6 Growth: ${(S.growthRows / 1e6).toLocaleString('en-US')}M rows vs empty`;
  await resetState(ctx);
  const api = await spawnApi(ctx);
  const request: RequestSpec = { path: '/api/contact-api/', contentType: 'application/json', body: jsonBody(ctx.accessKey) };
  const empty = [];
  const full = [];
  try {
    await prime(api.url, request);
    await resetState(ctx);
    empty.push(await loadPhase(ctx, '6 empty table #1', api.child, api.url, request));
    const t0 = Date.now();
    await ctx.sql.query(
      `insert into submissions (id, key_id, email, message, subject, custom_fields, email_status, email_attempts, client_ip, sent_at, created_at)
       select uuidv7(-make_interval(secs => n)), $1, 'visitor' || n || '@example.test', $2, 'Hello ' || n, $3, 'sent', 1, '127.0.0.1',
              now() - make_interval(secs => n), now() - make_interval(secs => n)
         from generate_series(1, $4::int) as n`,
      [ctx.keyId, BENCH_MESSAGE, JSON.stringify([['name', 'Ada Lovelace']]), S.growthRows],
    );
    await ctx.sql.query('vacuum analyze submissions');
    // The bulk load's own write-back (about a gigabyte of WAL and dirty pages) is not what a
    // service with a big table sees: flush it before measuring, not during.
    await ctx.sql.query('checkpoint');
    log(`inserted ${S.growthRows} rows in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    // Two windows, as on the empty table: a single window's p99 moves by a third between runs.
    full.push(await loadPhase(ctx, `6 ${S.growthRows} rows #1`, api.child, api.url, request));
    full.push(await loadPhase(ctx, `6 ${S.growthRows} rows #2`, api.child, api.url, request));
    await ctx.sql.query('truncate submissions, attachments, webhook_deliveries');
    empty.push(await loadPhase(ctx, '6 empty table #2', api.child, api.url, request));
  } finally {
    await stopReporting(api.child, scenario);
  }
  const emptySummary = combine(empty);
  const fullSummary = combine(full);
  rows.push(
    { scenario, metric: 'throughput', service: fullSummary.rps, baseline: emptySummary.rps, unit: 'req/s', target: { kind: 'ratio>=', value: 0.9 } },
    { scenario, metric: 'latency p99', service: fullSummary.p99, baseline: emptySummary.p99, unit: 'ms', target: { kind: 'ratio<=', value: 1.1 } },
  );
}

// ---------------------------------------------------------------- 7: SIGKILL mid-backlog

/**
 * The duplicate window measured by what it costs: one worker drains a backlog and is SIGKILLed at
 * random moments, `S.kills` times, a fresh one taking over each time. A duplicate is a Message-ID
 * the sink answered 250 more than once. Two kinds of server are counted: one that commits a message
 * with its 250, so an answer written after the kill (before the next worker was ready) delivered
 * nothing; and one that queues it before answering, so every answer counts (RFC 1047:
 * its window starts at the end of the data). The issue's window, 250 → `sent`, is the first.
 * In flight at a kill: the rows the killed worker had claimed and not recorded, read from
 * PostgreSQL right after the kill. Target: duplicates ≤ 0.1 % of those.
 */
async function killMidBacklog(ctx: Ctx): Promise<void> {
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
  let sent = 0;
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
      await stopReporting(worker, scenario);
      // Rows claimed by this worker (after the previous kill) and never recorded; no worker runs now.
      const { rows: [held] } = await ctx.sql.query<{ n: number; at: Date }>(
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
    await stopReporting(worker, scenario);
  }
  const duplicatesOf = (accepted: Arrival[]) => accepted.length - new Set(accepted.map((item) => item.id)).size;
  const answeredToTheDead = (item: Arrival) => deadTimes.some(([from, to]) => item.at >= from && item.at < to);
  const atAnswer = duplicatesOf(ctx.sink.accepted.filter((item) => !answeredToTheDead(item)));
  const atDataEnd = duplicatesOf(ctx.sink.accepted);
  if (sent < count) {
    const { rows: left } = await ctx.sql.query<{ email_status: string; n: number }>(
      `select email_status, count(*)::int as n from submissions where email_status <> 'sent' group by 1`,
    );
    notes.push(`7: only ${sent} of ${count} rows sent within ${S.drainCapMs / 1000} s; the rest: ${left.map((row) => `${row.n} ${row.email_status}`).join(', ')}`);
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
  const { rows: sent } = await ctx.sql.query<{ id: string; sent_ms: number }>(
    `select 'submission-' || id as id, extract(epoch from sent_at) * 1000 as sent_ms from submissions where email_status = 'sent'`,
  );
  const gaps = sent.flatMap((row) => {
    const at = once.get(row.id);
    return at === undefined ? [] : [Number(row.sent_ms) - at];
  }).sort((a, b) => a - b);
  return { p50: percentile(gaps, 0.5), p99: percentile(gaps, 0.99) };
}
/** Polls until `count` rows are `sent` or the deadline passes; returns how many are. */
async function waitForAllSent(ctx: Ctx, count: number, deadline: number): Promise<number> {
  for (;;) {
    const { rows: [row] } = await ctx.sql.query<{ n: number }>(`select count(*)::int as n from submissions where email_status = 'sent'`);
    if (row!.n >= count || Date.now() >= deadline) return row!.n;
    await sleep(200);
  }
}

// ---------------------------------------------------------------- report

let machine = '';
let printed = false;
function printReport(partial = false): void {
  if (printed) return;
  printed = true;
  const out: string[] = [];
  out.push('', machine, `Settings: ${CLIENTS} keep-alive clients from ${clientAddress(0)}…${clientAddress(CLIENTS - 1)}, ` +
    `intake ${S.rounds}×(${S.warmupMs / 1000} s warm-up + ${S.measureMs / 1000} s measured) per side, rate limit on (RATE_LIMIT_MAX=1000000), ` +
    `delivery ${S.deliveryWarmup.toLocaleString('en-US')} emails of warm-up + ${S.backlog.toLocaleString('en-US')} measured per side` +
    `${S.deliveryRounds > 1 ? ` (${S.deliveryRounds} rounds with 2 and more workers, medians)` : ''}, ` +
    `WORKER_CONCURRENCY=${WORKER_CONCURRENCY}, SMTP sink answers after ${SINK_DELAY_MS} ms` +
    `${startScriptFlags('start:api').length ? `, API flags (start:api) ${startScriptFlags('start:api').join(' ')}` : ''}` +
    `${startScriptFlags('start:worker').length ? `, worker flags (start:worker) ${startScriptFlags('start:worker').join(' ')}` : ''}` +
    `${nodeFlags.length ? `, node flags ${nodeFlags.join(' ')}` : ''}${quick ? ', --quick' : ''}${partial ? ' — PARTIAL (deadline)' : ''}`, '');
  out.push(renderTable(rows), '');
  const missed = rows.filter((row) => met(row) === false);
  out.push(missed.length ? `Targets missed: ${missed.map((row) => `${row.scenario} / ${row.metric}`).join('; ')}` : 'All targets met.');
  if (cpuTable.length) out.push('', 'CPU ms per request (intake) or per email (delivery), by process, in the measured windows:', ...cpuTable.map((line) => `  ${line}`));
  if (notes.length) out.push('', 'Notes:', ...notes.map((note) => `  - ${note}`));
  out.push('', `Total time ${((Date.now() - started) / 1000).toFixed(0)} s; load average ${os.loadavg()[0]!.toFixed(2)} at the end.`);
  process.stdout.write(`${out.join('\n')}\n`);
}

let exitCode = 0;
try {
  const ctx = await startServices();
  machine = await machineLine(ctx);
  log(machine);
  if (runs(1)) {
    const body = jsonBody(ctx.accessKey);
    await intake(ctx, '1 Intake JSON', { path: '/api/contact-api/', contentType: 'application/json', body }, { path: '/json', contentType: 'application/json', body });
  }
  if (runs(2)) {
    const fields = [
      { name: 'access_key', value: ctx.accessKey },
      { name: 'email', value: BENCH_SENDER },
      { name: 'message', value: BENCH_MESSAGE },
    ];
    const files = [1, 2, 3].map((n) => ({ name: 'file', filename: `photo-${n}.jpg`, contentType: 'image/jpeg', size: 100 * 1024 }));
    const service = multipartRequest('/api/contact-api/', fields, files);
    await intake(ctx, '2 Intake multipart 3×100 KB', service, { ...service, path: '/multipart' });
  }
  if (runs(3)) await delivery(ctx);
  if (runs(4)) await endToEnd(ctx);
  if (runs(5)) await memory(ctx);
  if (runs(6)) await growth(ctx);
  if (runs(7)) await killMidBacklog(ctx);
} catch (error) {
  exitCode = 1;
  notes.push(`run failed: ${error instanceof Error ? error.stack ?? error.message : String(error)}`);
} finally {
  printReport(exitCode !== 0);
}
await finish(exitCode);
