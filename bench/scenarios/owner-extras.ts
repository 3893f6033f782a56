// Scenario 13, what an owner's extras cost delivery: one worker, the spam filter on (a real rspamd,
// started here as scenario 9 starts it), draining a backlog of submissions of the plain confirmed
// key against one of a key with an autoresponse, 5 confirmed added recipients and a Slack channel,
// an operator's high-volume key (../support/extras-key.ts). Each submission of that key makes the
// owner's email, a copy to each recipient, the autoresponse and one chat post. The autoresponse
// goes only for a submission the filter passed, from a plain address (every visitor's here is
// `visitor-N@visitors.example`, one of its own, within its bounds per visitor mailbox), within the
// key's daily bound, which the worker's AUTORESPONSES_KEY_PER_DAY raises above what a side sends.
// Then the same key at its daily bound (today's autoresponses already sent), each submission
// deciding `limit_key_day` and sending none, against the same key with its autoresponse off: what a
// key at its bound costs. Every expected email is counted at the SMTP sink, by kind, and every post
// at the chat stand-in, so the figures are of work done. The sides run plain, extras, off, at
// bound, at bound, off, extras, plain; each side's figure is the mean of its two.
import type { Queue } from 'bullmq';
import { startRspamd } from '../../src/local/rspamd.ts';
import type { AutoresponseOutcome } from '../../src/shared/words/autoresponse-kinds.ts';
import { createWebhookQueue } from '../../src/shared/infra/queues/queues.ts';
import { MAX_ADDED_RECIPIENTS } from '../../src/shared/recipients/recipients.ts';
import { createdEventJob, submissionJob, type DeliveryJob } from '../../src/shared/deliveries/delivery-jobs.ts';
import { createdEventId } from '../../src/shared/webhooks/created-event-id.ts';
import { BENCH_MESSAGE } from '../floor/message.ts';
import { QUEUE_PREFIX, resetState, type Ctx } from '../support/context.ts';
import { cpuProbes, cpuSnapshot, probe, recordCpu, roundTrips, type CpuProbe } from '../support/cpu.ts';
import { CHAT_STAND_IN_ALLOW, EXTRAS_EMAILS_PER_SUBMISSION } from '../support/extras-key.ts';
import { now } from '../support/load.ts';
import { busyShare, childPids, machineCpu, sleep, track } from '../support/proc.ts';
import { spawnWorker, stopReporting } from '../support/processes.ts';
import type { Row } from '../support/report.ts';
import { freePort } from '../support/sent-window.ts';

type Side = 'plain' | 'extras' | 'atBound' | 'off';
const ORDER: Side[] = ['plain', 'extras', 'off', 'atBound', 'atBound', 'off', 'extras', 'plain'];
/** Each side: its title in the log, whether it drains the high-volume key, and what each of its submissions' autoresponse comes to. */
const SIDES: Record<Side, { title: string; extras: boolean; autoresponse: AutoresponseOutcome }> = {
  plain: { title: 'plain key', extras: false, autoresponse: 'off' },
  extras: { title: 'extras key', extras: true, autoresponse: 'sent' },
  atBound: { title: 'extras key at its autoresponse bound', extras: true, autoresponse: 'limit_key_day' },
  off: { title: 'extras key, autoresponse off', extras: true, autoresponse: 'off' },
};
/**
 * The key's daily bound while it sends (AUTORESPONSES_KEY_PER_DAY, which an approved key has from
 * its first day): an operator's choice for a key that answers this many visitors, above the 1,200
 * submissions a side drains (the tables are emptied between sides).
 */
const SENDING_PER_DAY = 10_000;
/** The bound the key is at on the at-bound side, and the off side's too: the service's default AUTORESPONSES_KEY_PER_DAY. */
const AT_BOUND_PER_DAY = 200;
/** The worker's AUTORESPONSES_KEY_PER_DAY on each side (the plain key sends none). */
const PER_DAY: Record<Side, number> = { plain: SENDING_PER_DAY, extras: SENDING_PER_DAY, atBound: AT_BOUND_PER_DAY, off: AT_BOUND_PER_DAY };
/** The processes whose CPU a submission costs, as the rows name them. */
const COSTS = ['worker', 'postgres', 'redis', 'rspamd', 'rspamd redis'] as const;
/** The Message-ID prefixes of the emails (src/shared/deliveries/delivery-kinds.ts): what the sink counts by kind. */
const KINDS = { owner: 'submission-', copy: 'copy-', autoresponse: 'autoresponse-' } as const;

/** One drain's measured part: its submissions, what arrived, the time from the resume to the last arrival, CPU ms per submission by process. */
type ExtrasDrain = {
  submissions: number;
  emails: Record<keyof typeof KINDS, number>;
  posts: number;
  seconds: number;
  cpu: Map<string, number>;
  complete: boolean;
};

export async function ownerExtras(ctx: Ctx): Promise<void> {
  const { rows, notes, log, quick } = ctx;
  // The warm-up in emails: the worker's JIT compiler is busy for its first thousands of jobs. The
  // high-volume key's sides take as many submissions as make that many emails at 7 each.
  const [warmupEmails, count] = quick ? [700, 300] : [1_400, 1_000];
  const rspamd = await startRspamd();
  const untrack = track({ name: 'rspamd', stop: rspamd.stop, pid: rspamd.child.pid });
  const webhookQueue = createWebhookQueue<DeliveryJob>(ctx.redis, QUEUE_PREFIX);
  const env = {
    SPAM_FILTER_URL: rspamd.url,
    SPAM_FILTER_CONTROLLER_URL: rspamd.controllerUrl,
    SPAM_FILTER_PASSWORD: rspamd.password,
    WEBHOOK_ALLOW: CHAT_STAND_IN_ALLOW,
  };
  const rspamdProbes: CpuProbe[] = [
    { label: 'rspamd', pids: () => [rspamd.child.pid!, ...childPids(rspamd.child.pid!)] },
    { label: 'rspamd redis', pids: () => [rspamd.statisticsRedis.pid!] },
  ];
  const drains: Record<Side, ExtrasDrain[]> = { plain: [], extras: [], atBound: [], off: [] };
  // Earlier scenarios' key emails (the unconfirmed key's requests to confirm) would be sent by the
  // reconciler in the middle of a drain.
  await ctx.sql.query('delete from key_emails');
  try {
    let visitors = 0;
    for (const [index, side] of ORDER.entries()) {
      const warmup = side === 'plain' ? warmupEmails : Math.ceil(warmupEmails / EXTRAS_EMAILS_PER_SUBMISSION);
      const drain = await extrasDrain(ctx, `13 ${SIDES[side].title} #${index + 1}`, side, {
        warmup,
        count,
        env: { ...env, AUTORESPONSES_KEY_PER_DAY: String(PER_DAY[side]) },
        extraProbes: rspamdProbes,
        webhookQueue,
        firstVisitor: visitors,
      });
      visitors += warmup + count;
      drains[side].push(drain);
    }
  } finally {
    await setAutoresponse(ctx, true);
    await webhookQueue.close();
    untrack();
    await rspamd.stop();
  }
  const mean = (side: Side, figure: (drain: ExtrasDrain) => number) => drains[side].reduce((sum, drain) => sum + figure(drain), 0) / drains[side].length;
  const pair = (service: Side, baseline: Side) => (figure: (drain: ExtrasDrain) => number) => ({
    service: mean(service, figure),
    baseline: mean(baseline, figure),
  });
  const both = pair('extras', 'plain');
  const atBound = pair('atBound', 'off');
  const emails = (drain: ExtrasDrain) => drain.emails.owner + drain.emails.copy + drain.emails.autoresponse;
  const cpu = (drain: ExtrasDrain, label: string) => drain.cpu.get(label) ?? 0;
  const total = (drain: ExtrasDrain) => COSTS.reduce((sum, label) => sum + cpu(drain, label), 0);
  const scenario = `13 Owner's extras: delivery, 1 worker, filter on (${count.toLocaleString('en-US')} submissions; extras vs plain key)`;
  const rowsOfScenario: Row[] = [
    { scenario, metric: 'emails at the sink per submission', ...both((drain) => emails(drain) / drain.submissions), unit: 'emails' },
    { scenario, metric: '… of which copies to added recipients', ...both((drain) => drain.emails.copy / drain.submissions), unit: 'emails' },
    { scenario, metric: '… of which autoresponses', ...both((drain) => drain.emails.autoresponse / drain.submissions), unit: 'emails' },
    { scenario, metric: 'chat posts per submission', ...both((drain) => drain.posts / drain.submissions), unit: 'posts' },
    { scenario, metric: 'time to drain (resume → last email or post)', ...both((drain) => drain.seconds * 1000), unit: 'ms' },
    { scenario, metric: 'submissions/s', ...both((drain) => drain.submissions / drain.seconds), unit: 'submissions/s' },
    { scenario, metric: 'emails/s', ...both((drain) => emails(drain) / drain.seconds), unit: 'emails/s' },
    ...COSTS.map((label): Row => ({ scenario, metric: `CPU ms per submission: ${label}`, ...both((drain) => cpu(drain, label)), unit: 'ms' })),
    { scenario, metric: 'CPU ms per submission: all five', ...both(total), unit: 'ms' },
    { scenario, metric: 'CPU ms per email sent: all five', ...both((drain) => (total(drain) * drain.submissions) / Math.max(1, emails(drain))), unit: 'ms' },
  ];
  // A key at its bound decides each submission's autoresponse (a transaction counting the key's
  // and its owner's autoresponses of the day) where a key with none writes `off` with the email's
  // `sent`: one transaction of the 22 or so a submission makes here.
  const bound = `13 Owner's extras at the autoresponse bound: delivery, 1 worker, filter on (${count.toLocaleString('en-US')} submissions; at bound vs autoresponse off)`;
  const rowsAtBound: Row[] = [
    { scenario: bound, metric: 'emails at the sink per submission', ...atBound((drain) => emails(drain) / drain.submissions), unit: 'emails' },
    { scenario: bound, metric: '… of which autoresponses', ...atBound((drain) => drain.emails.autoresponse / drain.submissions), unit: 'emails' },
    { scenario: bound, metric: 'chat posts per submission', ...atBound((drain) => drain.posts / drain.submissions), unit: 'posts' },
    {
      scenario: bound,
      metric: 'submissions/s',
      ...atBound((drain) => drain.submissions / drain.seconds),
      unit: 'submissions/s',
      target: { kind: 'ratio>=', value: AT_BOUND_RATE_TARGET },
    },
    ...COSTS.map((label): Row => ({
      scenario: bound,
      metric: `CPU ms per submission: ${label}`,
      ...atBound((drain) => cpu(drain, label)),
      unit: 'ms',
      ...(label === 'worker' ? { target: { kind: 'ratio<=', value: AT_BOUND_CPU_TARGET } } : {}),
    })),
    { scenario: bound, metric: 'CPU ms per submission: all five', ...atBound(total), unit: 'ms', target: { kind: 'ratio<=', value: AT_BOUND_CPU_TARGET } },
  ];
  rows.push(...rowsOfScenario, ...rowsAtBound);
  const each = (side: Side) => drains[side].map((drain) => (drain.submissions / drain.seconds).toFixed(0)).join(' and ');
  log(
    `owner's extras, delivery: extras ${each('extras')} vs plain ${each('plain')}; at bound ${each('atBound')} vs autoresponse off ${each('off')} submissions/s`,
  );
  if (Object.values(drains).some((side) => side.some((drain) => !drain.complete)))
    notes.push(`owner's extras, delivery: not every expected email and post arrived within ${ctx.S.drainCapMs / 1000} s; the figures are over what did`);
}

/**
 * The at-bound side against the same key with its autoresponse off: CPU per submission (the
 * worker's, and the five processes' together) at most this ratio, the drain rate at least this one.
 * Its decision is a few per cent of a submission's work, and two drains of one side have differed
 * by 10 to 30 % in CPU per submission on a shared machine: a tighter target would read met or
 * missed by chance.
 */
const AT_BOUND_CPU_TARGET = 1.1;
const AT_BOUND_RATE_TARGET = 0.9;

/** Turns the high-volume key's autoresponse on or off, as its owner's switch does (the workers read it with each claim). */
async function setAutoresponse(ctx: Ctx, enabled: boolean): Promise<void> {
  await ctx.sql.query('update verification_keys set autoresponse_enabled = $2 where id = $1', [ctx.highVolumeKey.id, enabled]);
}

/** Today's autoresponses of the high-volume key, all sent, to other visitors: the key at its daily bound of `count`. */
async function sentToday(ctx: Ctx, count: number): Promise<void> {
  await ctx.sql.query(
    `insert into autoresponses (id, key_id, email, mailbox, email_status, sent_at)
     select gen_random_uuid(), $1, 'earlier-' || n || '@visitors.example', 'earlier-' || n || '@visitors.example', 'sent', now()
       from generate_series(1, $2::int) as n`,
    [ctx.highVolumeKey.id, count],
  );
}

type DrainOptions = {
  warmup: number;
  count: number;
  env: Record<string, string>;
  extraProbes: CpuProbe[];
  webhookQueue: Queue<DeliveryJob>;
  /** The number of the first visitor address used: each submission has one of its own, across drains. */
  firstVisitor: number;
};

/**
 * One worker started on `warmup` submissions (its JIT compiler busy with them), then, with the
 * queues paused and idle, `count` more seeded and drained, measured from the resume to the last
 * expected email or post.
 */
async function extrasDrain(ctx: Ctx, title: string, side: Side, options: DrainOptions): Promise<ExtrasDrain> {
  const { warmup, count, env, extraProbes, webhookQueue } = options;
  const { extras, autoresponse } = SIDES[side];
  const keyId = extras ? ctx.highVolumeKey.id : ctx.keyId;
  const emailsEach = extras ? 1 + MAX_ADDED_RECIPIENTS + (autoresponse === 'sent' ? 1 : 0) : 1;
  const postsEach = extras ? 1 : 0;
  const queues = [ctx.queue, webhookQueue];
  await resetState(ctx);
  await setAutoresponse(ctx, side !== 'off');
  if (side === 'atBound') await sentToday(ctx, AT_BOUND_PER_DAY);
  for (const queue of queues) await queue.pause();
  await seedSubmissions(ctx, webhookQueue, keyId, warmup, options.firstVisitor);
  const worker = await spawnWorker(ctx, 1, { METRICS_PORT: String(await freePort()), ...env });
  const probes = cpuProbes(ctx, [probe('worker', [worker]), ...extraProbes]);
  try {
    ctx.sink.reset();
    ctx.chat.reset();
    const deadline = Date.now() + ctx.S.drainCapMs;
    for (const queue of queues) await queue.resume();
    await waitForEmails(ctx, 0, warmup * emailsEach, deadline);
    await ctx.chat.waitFor(warmup * postsEach, deadline);
    for (const queue of queues) await queue.pause();
    // The warm-up's last jobs record their outcome before the measured ones are seeded.
    while (Date.now() < deadline && (await Promise.all(queues.map((queue) => queue.getActiveCount()))).some((active) => active > 0)) await sleep(50);
    await sleep(300);
    await seedSubmissions(ctx, webhookQueue, keyId, count, options.firstVisitor + warmup);
    const [sinkFrom, postsFrom] = [ctx.sink.count(), ctx.chat.posts()];
    const measureDeadline = Date.now() + ctx.S.drainCapMs;
    const before = { cpu: cpuSnapshot(probes), trips: await roundTrips(ctx), machine: machineCpu(), at: now() };
    for (const queue of queues) await queue.resume();
    const emailsArrived = await waitForEmails(ctx, sinkFrom, count * emailsEach, measureDeadline);
    const postsArrived = await ctx.chat.waitFor(postsFrom + count * postsEach, measureDeadline);
    const after = { cpu: cpuSnapshot(probes), trips: await roundTrips(ctx), machine: machineCpu() };
    const arrivals = ctx.sink.arrivals.slice(sinkFrom).filter(ofTheDrain);
    const lastAt = Math.max(arrivals.at(-1)?.at ?? 0, postsEach ? ctx.chat.lastAt() : 0);
    const cpu = recordCpu(ctx, title, before.cpu, after.cpu, count, busyShare(before.machine, after.machine), { before: before.trips, after: after.trips });
    const emails = {
      owner: arrivals.filter((arrival) => arrival.id.startsWith(KINDS.owner)).length,
      copy: arrivals.filter((arrival) => arrival.id.startsWith(KINDS.copy)).length,
      autoresponse: arrivals.filter((arrival) => arrival.id.startsWith(KINDS.autoresponse)).length,
    };
    const posts = ctx.chat.posts() - postsFrom;
    const seconds = Math.max(0.001, (lastAt || now()) - before.at) / 1000;
    // Let the last outcomes be recorded before checking them.
    await sleep(300);
    await checkWork(ctx, title, side, { count, warmup, emails, posts, arrivals: arrivals.map((arrival) => arrival.id) });
    ctx.log(
      `${title}: ${count} submissions in ${seconds.toFixed(1)} s (${(count / seconds).toFixed(0)}/s); emails: owner ${emails.owner}, copies ${emails.copy}, autoresponses ${emails.autoresponse}; chat posts ${posts}`,
    );
    const complete = emailsArrived && postsArrived;
    if (!complete)
      ctx.notes.push(
        `${title}: ${arrivals.length} of ${count * emailsEach} emails and ${posts} of ${count * postsEach} posts within ${ctx.S.drainCapMs / 1000} s`,
      );
    return { submissions: count, emails, posts, seconds, cpu, complete };
  } finally {
    for (const queue of queues) await queue.resume();
    await stopReporting(ctx, worker, title);
  }
}

const ofTheDrain = (arrival: { id: string }) => Object.values(KINDS).some((prefix) => arrival.id.startsWith(prefix));

/** Resolves when `count` emails of the drain's kinds have arrived after the first `from`, or at the deadline (epoch ms) with what there is. */
async function waitForEmails(ctx: Ctx, from: number, count: number, deadline: number): Promise<boolean> {
  let seen = from;
  let arrived = 0;
  while (arrived < count) {
    if (Date.now() > deadline) return false;
    await sleep(20);
    const { arrivals } = ctx.sink;
    for (; seen < arrivals.length; seen += 1) if (ofTheDrain(arrivals[seen]!)) arrived += 1;
  }
  return true;
}

/**
 * Saves `count` submissions of the key as intake would (the row, and a delivery row per enabled
 * endpoint of the key) and queues their jobs. Visitor `firstVisitor + 1` onwards, one address each.
 */
async function seedSubmissions(ctx: Ctx, webhookQueue: Queue<DeliveryJob>, keyId: string, count: number, firstVisitor: number): Promise<void> {
  const { rows: seeded } = await ctx.sql.query<{ id: string }>(
    `insert into submissions (id, key_id, email, message, subject, custom_fields, client_ip)
     select gen_random_uuid(), $1, v.email, $2, 'New contact form submission from ' || v.email, $3, '127.0.0.1'
       from generate_series($4::int + 1, $4::int + $5::int) as n, lateral (select 'visitor-' || n || '@visitors.example' as email) as v
     returning id`,
    [
      keyId,
      BENCH_MESSAGE,
      JSON.stringify([
        ['name', 'Ada Lovelace'],
        ['company', 'Analytical Engines Ltd'],
      ]),
      firstVisitor,
      count,
    ],
  );
  const ids = seeded.map((row) => row.id);
  // As the API leaves them: no delivery rows, a job per enabled endpoint that writes its row (or the email's claim does).
  const { rows: endpoints } = await ctx.sql.query<{ id: string }>('select id from webhook_endpoints where key_id = $1 and enabled', [keyId]);
  const webhookJobs = ids.flatMap((id) => endpoints.map((endpoint) => createdEventJob(id, { id: createdEventId(id, endpoint.id), endpointId: endpoint.id })));
  for (let start = 0; start < ids.length; start += 1_000) {
    await ctx.queue.addBulk(
      ids.slice(start, start + 1_000).map((id) => {
        const job = submissionJob(id);
        return { name: job.name, data: job.data, opts: { jobId: id } };
      }),
    );
  }
  for (let start = 0; start < webhookJobs.length; start += 1_000) {
    await webhookQueue.addBulk(webhookJobs.slice(start, start + 1_000).map((job) => ({ name: job.name, data: job.data, opts: { jobId: job.rowId } })));
  }
}

/**
 * That the measured drain did the work it should have: each kind's emails at the sink, none twice,
 * the posts at the stand-in, each submission's verdict `ham` and its autoresponse's outcome the side's.
 */
async function checkWork(
  ctx: Ctx,
  title: string,
  side: Side,
  found: { count: number; warmup: number; emails: Record<keyof typeof KINDS, number>; posts: number; arrivals: string[] },
): Promise<void> {
  const { count, emails, posts } = found;
  const { extras, autoresponse } = SIDES[side];
  const expected = {
    owner: count,
    copy: extras ? count * MAX_ADDED_RECIPIENTS : 0,
    autoresponse: autoresponse === 'sent' ? count : 0,
    posts: extras ? count : 0,
  };
  const problems: string[] = [];
  for (const kind of Object.keys(KINDS) as Array<keyof typeof KINDS>) {
    if (emails[kind] !== expected[kind]) problems.push(`${emails[kind]} ${kind} emails at the sink, ${expected[kind]} expected`);
  }
  if (posts !== expected.posts) problems.push(`${posts} chat posts, ${expected.posts} expected`);
  if (ctx.chat.refused() > 0) problems.push(`${ctx.chat.refused()} chat posts refused by the stand-in`);
  const twice = found.arrivals.length - new Set(found.arrivals).size;
  if (twice > 0) problems.push(`${twice} emails arrived twice`);
  if (extras && ctx.chat.submissions() !== found.warmup + count)
    problems.push(`the posts named ${ctx.chat.submissions()} submissions, ${found.warmup + count} expected`);
  const { rows: outcomes } = await ctx.sql.query<{ verdict: string | null; autoresponse: string | null; n: string }>(
    'select spam_verdict as verdict, autoresponse, count(*) as n from submissions group by 1, 2 order by 3 desc',
  );
  const wanted = { verdict: 'ham', autoresponse };
  const others = outcomes.filter((row) => row.verdict !== wanted.verdict || row.autoresponse !== wanted.autoresponse);
  if (others.length)
    problems.push(
      `submissions not ${wanted.verdict} with autoresponse ${wanted.autoresponse}: ${others.map((row) => `${row.n} ${row.verdict}/${row.autoresponse}`).join(', ')}`,
    );
  if (problems.length) ctx.notes.push(`${title}: ${problems.join('; ')}`);
}
