// Scenario 12, the whole pipeline on the same cores: an API taking JSON submissions from 32 clients
// while 2 workers deliver them to a sink that answers after 100 ms, the service against its floor
// (bench/floor/api.ts's /json-pk and 2 × bench/floor/pipeline-worker.ts), sides alternating. Intake
// while delivering, emails delivered per second, every 200 delivered once, and the CPU of each
// process per delivered email. Each side starts from the same state (startQuiet): empty tables and
// Redis, PostgreSQL's buffers written out, no autovacuum at work. Every repeat's ratios are reported,
// with their spread, not only the repeats' sums.
import os from 'node:os';
import { resetState, type Ctx } from '../support/context.ts';
import { cpuProbes, cpuSnapshot, probe, recordCpu, roundTrips } from '../support/cpu.ts';
import { jsonBody } from '../support/load-phase.ts';
import { now, runLoad, type RequestSpec } from '../support/load.ts';
import { busyShare, machineCpu, sleep, type Child } from '../support/proc.ts';
import { spawnApi, spawnFloor, spawnFloorPipelineWorker, spawnWorker, stopReporting } from '../support/processes.ts';

export const PIPELINE_CLIENTS = 32;
const PIPELINE_SINK_DELAY_MS = 100;
const WORKERS = 2;
const MAX_REQUESTS = 1_000_000;
/** How long the service's processes may take to start: on a machine shared with other work, longer than the default. */
const START_TIMEOUT_MS = 60_000;

type Side = 'floor' | 'service';

/** One side's measured window, and what became of every 200 once the backlog drained. */
type Measured = {
  ok: number;
  seconds: number;
  delivered: number;
  /** CPU ms in the window by process label (api, worker-1, worker-2, postgres, redis, …). */
  cpu: Map<string, number>;
  trips: { pg: number; redis: number };
  busy: number;
  answered: number;
  notDelivered: number;
  deliveredTwice: number;
  /** Autovacuum and autoanalyze runs, and checkpoints, that ended in the window. */
  background: Background;
};

type Background = { vacuums: number; analyzes: number; checkpoints: number };

const loadLine = () =>
  os
    .loadavg()
    .map((value) => value.toFixed(2))
    .join(' ');

async function measureSide(ctx: Ctx, side: Side, title: string): Promise<Measured> {
  const { S, log, notes } = ctx;
  const quiet = await startQuiet(ctx);
  const loadAtStart = loadLine();
  const api = side === 'service' ? await spawnApi(ctx, 'api', START_TIMEOUT_MS) : await spawnFloor(ctx);
  const workers: Child[] = [];
  try {
    for (let index = 1; index <= WORKERS; index += 1)
      workers.push(side === 'service' ? await spawnWorker(ctx, index, {}, START_TIMEOUT_MS) : await spawnFloorPipelineWorker(ctx, index));
    ctx.sink.reset();
    const request: RequestSpec = {
      path: side === 'service' ? '/api/contact-api/' : '/json-pk',
      contentType: 'application/json',
      body: jsonBody(ctx.accessKey),
    };
    const answered: string[] = [];
    const probes = cpuProbes(ctx, [probe('api', [api.child]), ...workers.map((worker, index) => probe(`worker-${index + 1}`, [worker]))]);
    let window:
      | {
          at: number;
          cpu: Map<string, number>;
          trips: Promise<{ pg: number; redis: number }>;
          machine: ReturnType<typeof machineCpu>;
          commands: Promise<Map<string, number>>;
          statementsReset: Promise<unknown>;
          background: Promise<Background>;
        }
      | undefined;
    const switchTimer = setTimeout(() => {
      window = {
        at: now(),
        cpu: cpuSnapshot(probes),
        trips: roundTrips(ctx),
        machine: machineCpu(),
        commands: redisCommands(ctx),
        statementsReset: ctx.pgStatements ? ctx.sql.query('select pg_stat_statements_reset()') : Promise.resolve(),
        background: backgroundWork(ctx),
      };
    }, S.pipelineWarmupMs);
    const load = await runLoad({
      url: api.url,
      clients: PIPELINE_CLIENTS,
      warmupMs: S.pipelineWarmupMs,
      durationMs: S.pipelineMeasureMs,
      maxRequests: MAX_REQUESTS,
      request,
      onOk: (body) => answered.push((JSON.parse(body) as { submission_id: string }).submission_id),
    });
    clearTimeout(switchTimer);
    const endAt = now();
    const endCpu = cpuSnapshot(probes);
    const endMachine = machineCpu();
    const endTrips = await roundTrips(ctx);
    const endCommands = await redisCommands(ctx);
    const endBackground = await backgroundWork(ctx);
    const statements = ctx.pgStatements ? await topStatements(ctx) : [];
    if (!window) throw new Error(`${title}: the load ended before its warm-up did`);
    const start = window;
    const startTrips = await start.trips;
    const startCommands = await start.commands;
    const startBackground = await start.background;
    const background = {
      vacuums: endBackground.vacuums - startBackground.vacuums,
      analyzes: endBackground.analyzes - startBackground.analyzes,
      checkpoints: endBackground.checkpoints - startBackground.checkpoints,
    };
    await start.statementsReset;
    // The sink reports its arrivals every 20 ms: wait for those of the window's last moments.
    await sleep(200);
    const delivered = ctx.sink.arrivals.filter((arrival) => arrival.at >= start.at && arrival.at <= endAt).length;
    const cpu = new Map([...endCpu].map(([label, ms]) => [label, ms - (start.cpu.get(label) ?? 0)] as const));
    const busy = busyShare(start.machine, endMachine);
    const trips = { pg: endTrips.pg - startTrips.pg, redis: endTrips.redis - startTrips.redis };
    recordCpu(ctx, `${title}, per delivered email`, start.cpu, endCpu, delivered, busy, { before: startTrips, after: endTrips });
    recordCpu(ctx, `${title}, per request`, start.cpu, endCpu, load.ok, busy, { before: startTrips, after: endTrips });
    if (load.errors) notes.push(`${title}: ${load.errors} failed requests (first: ${load.firstError})`);
    const perEmail = (count: number) => (count / Math.max(1, delivered)).toFixed(2);
    const commands = [...endCommands]
      .map(([name, calls]) => [name, calls - (startCommands.get(name) ?? 0)] as const)
      .filter(([, calls]) => calls / Math.max(1, delivered) >= 0.05)
      .sort((a, b) => b[1] - a[1]);
    notes.push(`${title}: Redis commands per delivered email: ${commands.map(([name, calls]) => `${name} ${perEmail(calls)}`).join(', ')}`);
    if (statements.length)
      notes.push(
        `${title}: PostgreSQL statements per delivered email (calls, execution ms per call, total ms per email):\n` +
          statements
            .map((row) => `      ${perEmail(row.calls)} × ${row.meanMs.toFixed(3)} ms = ${(row.totalMs / Math.max(1, delivered)).toFixed(3)} ms  ${row.query}`)
            .join('\n'),
      );

    // Every 200 must reach the sink exactly once: wait (bounded) for the backlog to drain.
    const wanted = new Set(answered.map((id) => `submission-${id}`));
    const deadline = Date.now() + S.drainCapMs;
    const arrivedOf = () => ctx.sink.arrivals.filter((arrival) => wanted.has(arrival.id)).length;
    while (arrivedOf() < wanted.size && Date.now() < deadline) await sleep(250);
    // A duplicate would come after the first copy: a moment more for one still on its way.
    await sleep(1_000);
    const copies = new Map<string, number>();
    for (const arrival of ctx.sink.arrivals) if (wanted.has(arrival.id)) copies.set(arrival.id, (copies.get(arrival.id) ?? 0) + 1);
    const notDelivered = wanted.size - copies.size;
    const deliveredTwice = [...copies.values()].filter((count) => count > 1).length;
    if (notDelivered) notes.push(`${title}: ${notDelivered} of ${wanted.size} answered 200 not at the sink after ${S.drainCapMs / 1000} s`);
    log(
      `${title}: intake ${(load.ok / load.seconds).toFixed(0)} req/s, delivered ${(delivered / load.seconds).toFixed(0)} emails/s, ` +
        `cpu ${(busy * 100).toFixed(0)}%; ${wanted.size} answered 200, ${notDelivered} not delivered, ${deliveredTwice} twice`,
    );
    const benchPerRequest = ((cpu.get('bench') ?? 0) / Math.max(1, load.ok)).toFixed(2);
    notes.push(
      `${title}: load average ${loadAtStart} at its start, ${loadLine()} at its end; quiet after ${(quiet.waitedMs / 1000).toFixed(1)} s` +
        `${quiet.busy ? ` (still busy: ${quiet.busy})` : ''}; in the window ${background.vacuums} autovacuum(s), ${background.analyzes} autoanalyze(s), ` +
        `${background.checkpoints} checkpoint(s); the load generator ${benchPerRequest} ms of CPU per request`,
    );
    return { ok: load.ok, seconds: load.seconds, delivered, cpu, trips, busy, answered: wanted.size, notDelivered, deliveredTwice, background };
  } finally {
    await stopReporting(ctx, api.child, title);
    for (const worker of workers) await stopReporting(ctx, worker, title);
  }
}

/**
 * Empties the tables and Redis, writes out what the previous side left in PostgreSQL's buffers (a
 * checkpoint, which also restarts checkpoint_timeout's clock, so that no timed checkpoint falls in
 * the coming window), then waits for any autovacuum or statement still at work on what the previous
 * side wrote: without this, a side could start while PostgreSQL still vacuumed the last one's
 * tens of thousands of updated rows, and a repeat's pair moved by ±0.2.
 */
async function startQuiet(ctx: Ctx): Promise<{ waitedMs: number; busy: string }> {
  const started = Date.now();
  await resetState(ctx);
  await ctx.sql.query('checkpoint');
  let busy = '';
  while (Date.now() - started < QUIET_WAIT_CAP_MS) {
    const { rows } = await ctx.sql.query<{ work: string | null }>(
      `select string_agg(coalesce(nullif(backend_type, 'client backend'), left(query, 40)), '; ') as work
         from pg_stat_activity
        where pid <> pg_backend_pid() and (backend_type = 'autovacuum worker' or (backend_type = 'client backend' and state <> 'idle'))`,
    );
    busy = rows[0]?.work ?? '';
    if (!busy) break;
    await sleep(200);
  }
  return { waitedMs: Date.now() - started, busy };
}

/** How long a side waits for PostgreSQL's background work to end before it starts anyway (and says so). */
const QUIET_WAIT_CAP_MS = 30_000;

/** Autovacuum and autoanalyze runs on the database's tables so far, and checkpoints. */
async function backgroundWork(ctx: Ctx): Promise<Background> {
  const { rows } = await ctx.sql.query<{ vacuums: string; analyzes: string; checkpoints: string }>(
    `select (select coalesce(sum(autovacuum_count), 0) from pg_stat_user_tables) as vacuums,
            (select coalesce(sum(autoanalyze_count), 0) from pg_stat_user_tables) as analyzes,
            (select num_timed + num_requested from pg_stat_checkpointer) as checkpoints`,
  );
  const row = rows[0]!;
  return { vacuums: Number(row.vacuums), analyzes: Number(row.analyzes), checkpoints: Number(row.checkpoints) };
}

/** Redis's calls by command so far (INFO commandstats): the commands of BullMQ's scripts count one by one. */
async function redisCommands(ctx: Ctx): Promise<Map<string, number>> {
  const info = await ctx.redis.info('commandstats');
  return new Map([...info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)].map((match) => [match[1]!, Number(match[2])] as const));
}

/** The statements PostgreSQL ran since the last reset, the costliest first (pg_stat_statements). */
async function topStatements(ctx: Ctx): Promise<Array<{ calls: number; totalMs: number; meanMs: number; query: string }>> {
  const { rows } = await ctx.sql.query<{ calls: string; total: number; mean: number; query: string }>(
    `select calls, total_exec_time as total, mean_exec_time as mean, regexp_replace(query, '\\s+', ' ', 'g') as query
       from pg_stat_statements where dbid = (select oid from pg_database where datname = current_database())
      order by total_exec_time desc limit 15`,
  );
  return rows.map((row) => ({ calls: Number(row.calls), totalMs: row.total, meanMs: row.mean, query: row.query.slice(0, 140) }));
}

/** The repeats of one side together: their windows' sums. */
function combine(repeats: Measured[]) {
  const sum = (figure: (repeat: Measured) => number) => repeats.reduce((total, repeat) => total + figure(repeat), 0);
  const seconds = sum((repeat) => repeat.seconds);
  const delivered = sum((repeat) => repeat.delivered);
  const cpuOf = (...labels: string[]) => sum((repeat) => labels.reduce((total, label) => total + (repeat.cpu.get(label) ?? 0), 0)) / Math.max(1, delivered);
  const workerLabels = Array.from({ length: WORKERS }, (_, index) => `worker-${index + 1}`);
  return {
    intake: sum((repeat) => repeat.ok) / seconds,
    delivered: delivered / seconds,
    busy: sum((repeat) => repeat.busy * repeat.seconds) / seconds,
    notDelivered: sum((repeat) => repeat.notDelivered),
    deliveredTwice: sum((repeat) => repeat.deliveredTwice),
    answered: sum((repeat) => repeat.answered),
    cpu: {
      api: cpuOf('api'),
      workers: cpuOf(...workerLabels),
      postgres: cpuOf('postgres'),
      redis: cpuOf('redis'),
      all: cpuOf('api', ...workerLabels, 'postgres', 'redis'),
    },
    pgPerEmail: sum((repeat) => repeat.trips.pg) / Math.max(1, delivered),
    redisPerEmail: sum((repeat) => repeat.trips.redis) / Math.max(1, delivered),
  };
}

export async function pipeline(ctx: Ctx): Promise<void> {
  const { S, rows, notes } = ctx;
  const scenario = `12 Pipeline: API + ${WORKERS} workers, ${PIPELINE_CLIENTS} clients, sink ${PIPELINE_SINK_DELAY_MS} ms`;
  ctx.sink.setDelay(PIPELINE_SINK_DELAY_MS);
  const results: Record<Side, Measured[]> = { floor: [], service: [] };
  try {
    for (let repeat = 1; repeat <= S.pipelineRepeats; repeat += 1) {
      // Alternating, the floor first in odd repeats and second in even ones: a noisy minute hurts both.
      const order: Side[] = repeat % 2 === 1 ? ['floor', 'service'] : ['service', 'floor'];
      for (const side of order) results[side].push(await measureSide(ctx, side, `12 ${side} #${repeat}`));
    }
  } finally {
    ctx.sink.setDelay(ctx.sinkDelayMs);
  }
  const service = combine(results.service);
  const floor = combine(results.floor);
  // Each repeat's two sides ran one after the other: every repeat is held to the targets, and the
  // spread of its ratios shows how far a busy minute moved one pair.
  const perRepeat = results.service.map((repeat, index) => {
    const other = results.floor[index]!;
    return {
      intake: { service: repeat.ok / repeat.seconds, floor: other.ok / other.seconds },
      delivered: { service: repeat.delivered / repeat.seconds, floor: other.delivered / other.seconds },
    };
  });
  const spread = (figure: 'intake' | 'delivered') => {
    const ratios = perRepeat.map((repeat) => repeat[figure].service / Math.max(1e-9, repeat[figure].floor));
    return `${ratios.map((value) => value.toFixed(2)).join(', ')} (${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})`;
  };
  notes.push(`12 pipeline: each repeat's ratio, intake while delivering: ${spread('intake')}; delivered: ${spread('delivered')}`);
  rows.push(
    { scenario, metric: 'intake while delivering', service: service.intake, baseline: floor.intake, unit: 'req/s', target: { kind: 'ratio>=', value: 0.8 } },
    { scenario, metric: 'delivered', service: service.delivered, baseline: floor.delivered, unit: 'emails/s', target: { kind: 'ratio>=', value: 0.8 } },
    ...perRepeat.flatMap((repeat, index) => [
      {
        scenario,
        metric: `intake while delivering, repeat ${index + 1}`,
        service: repeat.intake.service,
        baseline: repeat.intake.floor,
        unit: 'req/s' as const,
        target: { kind: 'ratio>=' as const, value: 0.8 },
      },
      {
        scenario,
        metric: `delivered, repeat ${index + 1}`,
        service: repeat.delivered.service,
        baseline: repeat.delivered.floor,
        unit: 'emails/s' as const,
        target: { kind: 'ratio>=' as const, value: 0.8 },
      },
    ]),
    {
      scenario,
      metric: 'answered 200, not delivered',
      service: service.notDelivered,
      baseline: floor.notDelivered,
      unit: 'emails',
      target: { kind: '<=', value: 0 },
    },
    {
      scenario,
      metric: 'answered 200, delivered twice',
      service: service.deliveredTwice,
      baseline: floor.deliveredTwice,
      unit: 'emails',
      target: { kind: '<=', value: 0 },
    },
    { scenario, metric: 'CPU busy', service: service.busy * 100, baseline: floor.busy * 100, unit: '%' },
    { scenario, metric: 'CPU ms per delivered email: all four', service: service.cpu.all, baseline: floor.cpu.all, unit: 'ms' },
    { scenario, metric: 'CPU ms per delivered email: API', service: service.cpu.api, baseline: floor.cpu.api, unit: 'ms' },
    { scenario, metric: `CPU ms per delivered email: ${WORKERS} workers`, service: service.cpu.workers, baseline: floor.cpu.workers, unit: 'ms' },
    { scenario, metric: 'CPU ms per delivered email: PostgreSQL', service: service.cpu.postgres, baseline: floor.cpu.postgres, unit: 'ms' },
    { scenario, metric: 'CPU ms per delivered email: Redis', service: service.cpu.redis, baseline: floor.cpu.redis, unit: 'ms' },
  );
  notes.push(
    `12 pipeline: ${service.answered} and ${floor.answered} answered 200 (service, floor); per delivered email ${service.pgPerEmail.toFixed(1)} and ` +
      `${floor.pgPerEmail.toFixed(1)} PostgreSQL transactions, ${service.redisPerEmail.toFixed(1)} and ${floor.redisPerEmail.toFixed(1)} Redis commands`,
  );
}
