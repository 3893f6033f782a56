// `npm run bench`: starts real services, runs the selected scenarios (bench/scenarios/) against the
// service and a floor baseline on the same services, and prints one table. See docs/benchmarks.md.

//   npm run bench                 the full run (its length: docs/benchmarks.md#running-it; ends by itself within 42)
//   npm run bench -- --quick      short windows and small backlogs, for a smoke check
//   npm run bench -- --only=1,3   some scenarios only (1 JSON, 2 multipart, 3 delivery, 4 end to end, 5 memory, 6 growth,
//                                 7 workers SIGKILLed mid-backlog, 8 bounces, 9 spam filter, 10 the reconciler behind a backlog,
//                                 11 the owner console's search and overview at 100,000 messages a key,
//                                 12 the whole pipeline: intake while 2 workers deliver, against its floor,
//                                 13 delivery for a key with an autoresponse, 5 added recipients and a chat channel, and for
//                                 the same key at its daily autoresponse bound against it with the autoresponse off,
//                                 14 the fan-out (owner, 2 copies, a webhook, Slack) through an SMTP and a Redis outage,
//                                 and through workers, Redis and the API SIGKILLed: deliveries lost and duplicated,
//                                 15 intake with traces exported to a collector on loopback against tracing unset,
//                                 16 delivery of emails with a file each, scanned by a local clamd against scanning off)
//   npm run bench -- --profile    also write V8 CPU profiles of the API, worker, floor and mail-loop processes to bench/profiles/
//                                 (summarise them with `node bench/profile-summary.ts bench/profiles/api-*.cpuprofile`)
//   npm run bench -- --one-core   scenario 1 also compares the service with the PK-only floor with each side (its API or floor,
//                                 PostgreSQL, Redis) on CPU 0 and the load generator on the other cores (taskset)
//   npm run bench -- --only=1 --pk-floor-only   scenario 1's comparison with the PK-only floor alone (with --one-core, both variants)
//   npm run bench -- --pg-statements   PostgreSQL keeps statement statistics (pg_stat_statements): scenario 12 lists each
//                                 side's statements per delivered email and their time
//   npm run bench -- --workers=1,2,4,8          the worker counts of scenario 3
//   npm run bench -- --intake-repeats=4         alternating repeats of scenarios 1 and 2 (default 2, 1 with --quick)
//   npm run bench -- --delivery-repeats=5       alternating loop/service repeats of scenario 3 with 2 and more workers (default 3, 1 with --quick)
//   npm run bench -- --pipeline-repeats=4       alternating floor/service repeats of scenario 12 (default 2, 1 with --quick)
//   npm run bench -- --sink-delay=200          the SMTP sink's delay per message (default 50 ms)
//   npm run bench -- --node-flags="--max-semi-space-size=8"   Node flags for every process under test
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { bounces } from './scenarios/bounces.ts';
import { consoleQueries } from './scenarios/console.ts';
import { delivery } from './scenarios/delivery.ts';
import { endToEnd } from './scenarios/end-to-end.ts';
import { fileScan } from './scenarios/file-scan.ts';
import { growth } from './scenarios/growth.ts';
import { intakeJson, intakeMultipart } from './scenarios/intake.ts';
import { fanoutChaos } from './scenarios/fanout-chaos.ts';
import { killMidBacklog } from './scenarios/kill-mid-backlog.ts';
import { memory } from './scenarios/memory.ts';
import { pipeline } from './scenarios/pipeline.ts';
import { ownerExtras } from './scenarios/owner-extras.ts';
import { reconcileBacklog } from './scenarios/reconcile.ts';
import { spamFilter } from './scenarios/spam.ts';
import { tracing } from './scenarios/tracing.ts';
import { machineLine, startServices, type Ctx, type Run, type Settings } from './support/context.ts';
import { killAllNow, ROOT, stopAll, track } from './support/proc.ts';
import { printReport } from './support/report.ts';

// ---------------------------------------------------------------- settings

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const profile = args.includes('--profile');
const pgStatements = args.includes('--pg-statements');
const oneCore = args.includes('--one-core');
const pkFloorOnly = args.includes('--pk-floor-only');
const option = (name: string) => args.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3);
const only = option('only')?.split(',').map(Number);
const workerCounts = option('workers')?.split(',').map(Number);
const nodeFlags = option('node-flags')?.split(/\s+/).filter(Boolean) ?? [];
const runs = (scenario: number) => !only || only.includes(scenario);

const S: Settings = quick
  ? {
      warmupMs: 1_000,
      measureMs: 3_000,
      repeats: 1,
      backlog: 1_000,
      deliveryWarmup: 1_000,
      deliveryRepeats: 1,
      workerCounts: [1, 2],
      uploadClients: 5,
      bigEmails: 100,
      growthRows: 100_000,
      drainCapMs: 60_000,
      kills: 4,
      dsns: 2_000,
      pipelineWarmupMs: 2_000,
      pipelineMeasureMs: 5_000,
      pipelineRepeats: 1,
    }
  : {
      warmupMs: 3_000,
      measureMs: 6_000,
      repeats: 2,
      backlog: 5_000,
      deliveryWarmup: 5_000,
      deliveryRepeats: 3,
      workerCounts: [1, 2, 4],
      uploadClients: 20,
      bigEmails: 1_000,
      growthRows: 1_000_000,
      drainCapMs: 90_000,
      kills: 12,
      dsns: 10_000,
      pipelineWarmupMs: 5_000,
      pipelineMeasureMs: 15_000,
      pipelineRepeats: 2,
    };
if (workerCounts) S.workerCounts = workerCounts;
const intakeRepeats = option('intake-repeats');
if (intakeRepeats) S.repeats = Math.max(1, Number(intakeRepeats) || 1);
const deliveryRepeats = option('delivery-repeats');
if (deliveryRepeats) S.deliveryRepeats = Math.max(1, Number(deliveryRepeats) || 1);
const pipelineRepeats = option('pipeline-repeats');
if (pipelineRepeats) S.pipelineRepeats = Math.max(1, Number(pipelineRepeats) || 1);
const DEADLINE_MS = 40 * 60_000; // the whole run, services included; stopping takes the rest of the 42 minutes at most

const started = Date.now();
const run: Run = {
  S,
  quick,
  nodeFlags,
  profileDir: profile ? path.join(ROOT, 'bench', 'profiles') : undefined,
  oneCore,
  pkFloorOnly,
  pgStatements,
  sinkDelayMs: Number(option('sink-delay') ?? 50),
  adminToken: randomBytes(24).toString('hex'),
  started,
  rows: [],
  notes: [],
  cpuTable: [],
  log: (message: string) => process.stderr.write(`[bench ${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s] ${message}\n`),
};
const { log, notes } = run;

/** The scenarios by number, in the order they run. */
const scenarios: Array<[number, (ctx: Ctx) => Promise<void>]> = [
  [1, intakeJson],
  [2, intakeMultipart],
  [3, delivery],
  [4, endToEnd],
  [5, memory],
  [6, growth],
  [7, killMidBacklog],
  [8, bounces],
  [9, spamFilter],
  [10, reconcileBacklog],
  [11, consoleQueries],
  [12, pipeline],
  [13, ownerExtras],
  [14, fanoutChaos],
  [15, tracing],
  [16, fileScan],
];

// ---------------------------------------------------------------- lifecycle

let machine = '';
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
  printReport(run, machine, true);
  void finish(1);
}, DEADLINE_MS);
deadline.unref();

// ---------------------------------------------------------------- services and scenarios

const dir = await mkdtemp(path.join(os.tmpdir(), 'cfs-bench-'));
track({ name: 'temp dir', stop: () => rm(dir, { recursive: true, force: true }) });
if (run.profileDir) await mkdir(run.profileDir, { recursive: true });

let exitCode = 0;
try {
  const ctx = await startServices(run, dir);
  machine = await machineLine(ctx);
  log(machine);
  for (const [number, scenario] of scenarios) {
    if (runs(number)) await scenario(ctx);
  }
} catch (error) {
  exitCode = 1;
  notes.push(`run failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
} finally {
  printReport(run, machine, exitCode !== 0);
}
await finish(exitCode);
