// Scenario 8, bounces: delivery status notifications sent to one bounce receiver (`npm run
// start:bounces`) over 16 SMTP connections, each for a sent submission of its own, against the
// floor: a bare smtp-server that reads each message and answers 250. The service checks the return
// path's MAC, parses the report and commits the row `bounced` before each 250.
import { randomUUID } from 'node:crypto';
import { createTransport } from 'nodemailer';
import { deployedNodeFlags } from '../../src/local/deployed-flags.ts';
import { createReturnPaths } from '../../src/shared/bounces/return-path.ts';
import { dsn } from '../../tools/sample-reports.ts';
import { BENCH_MESSAGE } from '../floor/message.ts';
import { cpuProbes, cpuSnapshot, probe, recordCpu, roundTrips } from '../support/cpu.ts';
import { resetState, type Ctx } from '../support/context.ts';
import { percentile } from '../support/load.ts';
import { busyShare, machineCpu, spawnNode, type Child } from '../support/proc.ts';
import { flagsFor, stopReporting } from '../support/processes.ts';

const CONNECTIONS = 16;
const BOUNCE_DOMAIN = 'bounces.bench.test';

type Sent = { count: number; seconds: number; p50: number; p99: number; refused: number; busy: number };

/** Sends each report over a pool of CONNECTIONS connections, one message in flight on each. */
async function sendReports(port: number, reports: Array<{ to: string; raw: string }>): Promise<Omit<Sent, 'busy'>> {
  const transport = createTransport({
    host: '127.0.0.1',
    port,
    secure: false,
    ignoreTLS: true,
    pool: true,
    maxConnections: CONNECTIONS,
    maxMessages: Infinity,
  });
  const latencies: number[] = [];
  let refused = 0;
  let next = 0;
  const started = performance.now();
  try {
    await Promise.all(
      Array.from({ length: CONNECTIONS }, async () => {
        while (next < reports.length) {
          const report = reports[next++]!;
          const t0 = performance.now();
          // A relay's report has the null sender (MAIL FROM:<>), as RFC 3464 requires.
          await transport.sendMail({ envelope: { from: '', to: [report.to] }, raw: report.raw }).then(
            () => latencies.push(performance.now() - t0),
            () => (refused += 1),
          );
        }
      }),
    );
  } finally {
    transport.close();
  }
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return { count: latencies.length, seconds, p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99), refused };
}

/** Sent submissions, each with the report its return path would receive. */
async function sentSubmissions(ctx: Ctx, count: number): Promise<Array<{ to: string; raw: string }>> {
  const returnPaths = createReturnPaths(ctx.env.SECRET!, BOUNCE_DOMAIN);
  const ids = Array.from({ length: count }, () => randomUUID());
  await ctx.sql.query(
    `insert into submissions (id, key_id, email, message, subject, custom_fields, email_status, email_attempts, client_ip, sent_at)
     select id, $1, 'visitor@example.test', $2, 'Hello', '[]', 'sent', 1, '127.0.0.1', now() from unnest($3::uuid[]) as id`,
    [ctx.keyId, BENCH_MESSAGE, ids],
  );
  return ids.map((id) => {
    const to = returnPaths.address('submission', id);
    return { to, raw: dsn({ to, recipient: 'owner@example.test' }) };
  });
}

async function measure(child: Child, port: number, reports: Array<{ to: string; raw: string }>, warmup: number, ctx: Ctx, title: string): Promise<Sent> {
  await sendReports(port, reports.slice(0, warmup));
  const probes = cpuProbes(ctx, [probe(title, [child])]);
  const [cpuBefore, tripsBefore, machineBefore] = [cpuSnapshot(probes), await roundTrips(ctx), machineCpu()];
  const sent = await sendReports(port, reports.slice(warmup));
  const [cpuAfter, tripsAfter, busy] = [cpuSnapshot(probes), await roundTrips(ctx), busyShare(machineBefore, machineCpu())];
  recordCpu(ctx, `8 ${title}`, cpuBefore, cpuAfter, sent.count, busy, { before: tripsBefore, after: tripsAfter });
  return { ...sent, busy };
}

export async function bounces(ctx: Ctx): Promise<void> {
  const { S, rows, notes, log } = ctx;
  const warmup = Math.min(1_000, S.dsns / 5);
  const scenario = `8 Bounces (${S.dsns.toLocaleString('en-US')} DSNs over ${CONNECTIONS} connections)`;
  await resetState(ctx);

  const floor = await spawnNode({
    name: 'floor-receiver',
    script: 'bench/floor/smtp-receiver.ts',
    env: {},
    readyPattern: /floor smtp listening \d+/,
    nodeArgs: flagsFor(ctx, 'floor-receiver'),
  });
  let baseline: Sent;
  try {
    const port = Number(/floor smtp listening (\d+)/.exec(floor.output())![1]);
    const reports = Array.from({ length: warmup + S.dsns }, (_, index) => ({
      to: `r${index}@${BOUNCE_DOMAIN}`,
      raw: dsn({ to: `r${index}@${BOUNCE_DOMAIN}` }),
    }));
    baseline = await measure(floor, port, reports, warmup, ctx, 'floor receiver');
    log(`bounces floor: ${(baseline.count / baseline.seconds).toFixed(0)} DSNs/s`);
  } finally {
    await stopReporting(ctx, floor, scenario);
  }

  const reports = await sentSubmissions(ctx, warmup + S.dsns);
  const receiver = await spawnNode({
    name: 'bounces',
    script: 'src/bounces/main.ts',
    env: {
      ...ctx.env,
      BOUNCE_DOMAIN,
      BOUNCE_SMTP_HOST: '127.0.0.1',
      BOUNCE_SMTP_PORT: '0',
      // One relay sends every report here, far above the default per-address allowance.
      BOUNCE_MESSAGES_PER_MINUTE_PER_IP: '1000000',
    },
    readyPattern: /bounce receiver ready/,
    nodeArgs: flagsFor(ctx, 'bounces', deployedNodeFlags('start:bounces')),
  });
  let service: Sent;
  try {
    const port = Number(/"port":(\d+),"domain"/.exec(receiver.output())![1]);
    service = await measure(receiver, port, reports, warmup, ctx, 'bounce receiver');
    log(`bounces service: ${(service.count / service.seconds).toFixed(0)} DSNs/s`);
  } finally {
    await stopReporting(ctx, receiver, scenario);
  }
  const { rows: counted } = await ctx.sql.query<{ n: string }>(`select count(*) as n from submissions where email_status = 'bounced'`);
  const bounced = Number(counted[0]!.n);
  if (bounced !== reports.length) notes.push(`bounces: ${bounced} of ${reports.length} submissions ended bounced`);
  for (const [side, sent] of [
    ['service', service],
    ['floor', baseline],
  ] as const) {
    if (sent.refused) notes.push(`bounces ${side}: ${sent.refused} DSNs refused`);
  }
  rows.push(
    {
      scenario,
      metric: 'DSNs/s',
      service: service.count / service.seconds,
      baseline: baseline.count / baseline.seconds,
      unit: 'DSNs/s',
      target: { kind: '>=', value: 500 },
    },
    { scenario, metric: 'reply to a DSN p50', service: service.p50, baseline: baseline.p50, unit: 'ms' },
    { scenario, metric: 'reply to a DSN p99', service: service.p99, baseline: baseline.p99, unit: 'ms' },
    { scenario, metric: 'CPU busy', service: service.busy * 100, baseline: baseline.busy * 100, unit: '%' },
  );
}
