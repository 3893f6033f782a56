// Scenario 14, the fan-out under outages and kills: each submission of one key makes five
// deliveries (the owner's email, a copy to each of 2 confirmed added recipients, a webhook and a
// Slack message), with the spam filter on (a real rspamd). Two runs of 40 submissions/s for 25 s
// against an API and 2 workers of their own, on a Redis of their own (append-only, as a server
// that keeps its data keeps it):
//
// 1. The outage timings: the SMTP relay refuses everything from +0 to +65 s and Redis is
//    SIGKILLed at +8 s and started again at +13 s. Figures: from Redis's return to the webhook and
//    the Slack POST of each submission answered 200 while it was down (p50, max), with the shipped
//    reconciler and breaker settings; then, the relay accepting again, from the breaker's
//    successful probe (its first email) to the first email of the backlog, and the backlog's
//    drain rate.
// 2. The chaos run: the relay accepting, a worker SIGKILLed at +4, +16 and +21 s (a fresh one
//    started each time), Redis SIGKILLed at +8 s and started at +13 s, the API SIGKILLed at +18 s
//    and started again. Figures: per kind, the deliveries lost (answered 200, never delivered) and
//    duplicated (the same Message-ID accepted twice, the same webhook-id posted twice, the same
//    submission posted twice to Slack).
//
// Both wait for the drain (at most S.drainCapMs after the load, or after the relay's return) and
// then count: a delivery missing then is counted undelivered (lost, if the drain finished). The
// chaos run's leases are short (JOB_LOCK_MS 5 s, CLAIM_LEASE_MS 10 s) so that what a killed worker
// held is taken up again within the run (on a slow machine a send that outlives its lease is sent
// again: duplicates the shipped 5 min lease would not make); everything else keeps its shipped
// settings.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startRspamd, type RspamdService } from '../../src/local/rspamd.ts';
import { startRedis } from '../../src/local/services.ts';
import { createOrm } from '../../src/shared/infra/db/orm.ts';
import { createErasedForm, createKeyVault } from '../../src/shared/infra/secrets.ts';
import { generateKey } from '../../src/shared/keys/keys.ts';
import { confirmRecipient, recipientsOfKeys, setRecipients } from '../../src/shared/recipients/recipients.ts';
import { entities } from '../../src/shared/schema.ts';
import { parseAllowList } from '../../src/shared/webhooks/address-guard.ts';
import { createChatChannel, createEndpoint } from '../../src/shared/webhooks/webhooks.ts';
import { BENCH_MESSAGE, BENCH_OWNER, BENCH_SENDER } from '../floor/message.ts';
import { resetState, type Ctx } from '../support/context.ts';
import { CHAT_STAND_IN_ALLOW } from '../support/extras-key.ts';
import { now, percentile } from '../support/load.ts';
import { sleep, track, type Child } from '../support/proc.ts';
import { spawnApi, spawnWorker, stopReporting } from '../support/processes.ts';
import type { Row } from '../support/report.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';

const RATE = 40;
const LOAD_SECONDS = 25;
const RECIPIENTS = ['colleague-1@fanout-team.example', 'colleague-2@fanout-team.example'];
const EMAILS_EACH = 1 + RECIPIENTS.length;
const REDIS_DOWN_S = 8;
const REDIS_UP_S = 13;
const SMTP_BACK_S = 65;
/** How long a process started again during the load may take to be ready: the machine is at its busiest then. */
const RESTART_TIMEOUT_MS = 90_000;
/** Short leases: a killed worker's rows and jobs are taken up again within seconds. */
const LEASES = { JOB_LOCK_MS: '5000', CLAIM_LEASE_MS: '10000' };

/** One request of the load: when it was sent and answered, its status (0: no answer), the submission it made. */
type Answer = { sentAt: number; answeredAt: number; status: number; id: string | undefined };

type Services = {
  ctx: Ctx;
  env: Record<string, string>;
  redis: Awaited<ReturnType<typeof startRedis>>;
  redisDir: string;
  api: { child: Child; url: string };
  workers: Child[];
  hooks: WebhookReceiver;
  accessKey: string;
};

export async function fanoutChaos(ctx: Ctx): Promise<void> {
  const rspamd = await startRspamd();
  const untrackRspamd = track({ name: 'rspamd', stop: rspamd.stop, pid: rspamd.child.pid });
  const hooks = await startWebhookReceiver();
  const untrackHooks = track({ name: 'webhook receiver', stop: hooks.close });
  try {
    await resetState(ctx);
    const key = await createFanoutKey(ctx, hooks.url);
    await outageTimings(ctx, rspamd, hooks, key.value);
    await chaosRun(ctx, rspamd, hooks, key.value);
  } finally {
    ctx.sink.setRefusing(false);
    untrackHooks();
    await hooks.close();
    untrackRspamd();
    await rspamd.stop();
  }
}

/** The key: the bench owner's (confirmed), 2 confirmed added recipients, a webhook and a Slack channel. */
async function createFanoutKey(ctx: Ctx, webhookUrl: string): Promise<{ id: string; value: string }> {
  const orm = await createOrm(ctx.env.DATABASE_URL!, entities, 1);
  try {
    const vault = createKeyVault(ctx.env.SECRET!);
    const created = await generateKey(orm.em.fork(), vault, { email: BENCH_OWNER, emailsPerHour: 1_000 });
    const { key } = created;
    await setRecipients(orm.em.fork(), { id: key.id, mailbox: key.mailbox, status: key.status }, RECIPIENTS, {
      emailsPerHour: 1_000,
      erasedForm: createErasedForm(ctx.env.SECRET!),
    });
    for (const recipient of (await recipientsOfKeys(orm.em.fork(), [key.id])).get(key.id) ?? []) await confirmRecipient(orm.em.fork(), recipient.id);
    await createEndpoint(orm.em.fork(), vault, key.id, webhookUrl);
    await createChatChannel(
      orm.em.fork(),
      vault,
      key.id,
      { kind: 'slack', url: ctx.chat.url },
      parseAllowList([CHAT_STAND_IN_ALLOW]),
      'https://api.telegram.org',
    );
    // The requests to confirm are not part of the scenario.
    await ctx.sql.query('delete from key_emails');
    return { id: key.id, value: created.keyValue };
  } finally {
    await orm.close();
  }
}

async function startRun(ctx: Ctx, rspamd: RspamdService, hooks: WebhookReceiver, accessKey: string, leases: Record<string, string> = {}): Promise<Services> {
  await resetState(ctx);
  const redisDir = await mkdtemp(path.join(os.tmpdir(), 'cfs-bench-redis-'));
  const redis = await startRedis({ dir: redisDir });
  const env = {
    ...ctx.env,
    REDIS_URL: redis.url,
    WEBHOOK_ALLOW: CHAT_STAND_IN_ALLOW,
    SPAM_FILTER_URL: rspamd.url,
    SPAM_FILTER_CONTROLLER_URL: rspamd.controllerUrl,
    SPAM_FILTER_PASSWORD: rspamd.password,
    ...leases,
  };
  const api = await spawnApi({ ...ctx, env });
  const workers = [await spawnWorker({ ...ctx, env }, 1), await spawnWorker({ ...ctx, env }, 2)];
  ctx.sink.reset();
  ctx.chat.reset();
  hooks.reset();
  return { ctx, env, redis, redisDir, api, workers, hooks, accessKey };
}

async function stopRun(run: Services, title: string): Promise<void> {
  for (const worker of run.workers) await stopReporting(run.ctx, worker, title);
  await stopReporting(run.ctx, run.api.child, title);
  await run.redis.stop();
  await rm(run.redisDir, { recursive: true, force: true });
}

/** Sends RATE submissions a second for LOAD_SECONDS to whichever API runs at the time; every answer, in order. */
async function load(run: Services): Promise<Answer[]> {
  const body = JSON.stringify({
    access_key: run.accessKey,
    email: BENCH_SENDER,
    message: BENCH_MESSAGE,
    name: 'Ada Lovelace',
    company: 'Analytical Engines Ltd',
  });
  const start = now();
  const answers: Array<Promise<Answer>> = [];
  for (let index = 0; index < RATE * LOAD_SECONDS; index += 1) {
    const due = start + (index * 1000) / RATE;
    if (due > now()) await sleep(due - now());
    answers.push(submit(`${run.api.url}/api/contact-api/`, body));
  }
  return Promise.all(answers);
}

async function submit(url: string, body: string): Promise<Answer> {
  const sentAt = now();
  try {
    const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body, signal: AbortSignal.timeout(15_000) });
    const json = (await response.json().catch(() => ({}))) as { submission_id?: string };
    return { sentAt, answeredAt: now(), status: response.status, id: response.status === 200 ? json.submission_id : undefined };
  } catch {
    return { sentAt, answeredAt: now(), status: 0, id: undefined };
  }
}

/** SIGKILLs Redis; answers when it is gone. */
async function killRedis(run: Services): Promise<number> {
  const exited = new Promise((resolve) => run.redis.child.once('exit', resolve));
  process.kill(run.redis.child.pid!, 'SIGKILL');
  await exited;
  return now();
}

async function restartRedis(run: Services): Promise<number> {
  run.redis = await startRedis({ port: run.redis.port, dir: run.redisDir });
  return now();
}

async function killAndRestartWorker(run: Services, index: number, generation: number, title: string): Promise<void> {
  const worker = run.workers[index]!;
  const exited = new Promise((resolve) => worker.child.once('exit', resolve));
  process.kill(worker.pid, 'SIGKILL');
  await exited;
  await stopReporting(run.ctx, worker, title);
  run.workers[index] = await spawnWorker({ ...run.ctx, env: run.env }, generation, {}, RESTART_TIMEOUT_MS);
}

async function killAndRestartApi(run: Services, title: string): Promise<void> {
  const { child } = run.api;
  const exited = new Promise((resolve) => child.child.once('exit', resolve));
  process.kill(child.pid, 'SIGKILL');
  await exited;
  await stopReporting(run.ctx, child, title);
  run.api = await spawnApi({ ...run.ctx, env: run.env }, 'api-2', RESTART_TIMEOUT_MS);
}

const at = async (start: number, seconds: number) => {
  const wait = start + seconds * 1000 - now();
  if (wait > 0) await sleep(wait);
};

/** What arrived for the answered submissions, per kind: undelivered (lost, once drained) and duplicated, and when each first arrived. */
type Tally = {
  answered: number;
  refused: number;
  lost: Record<Kind, number>;
  duplicated: Record<Kind, number>;
  firstHook: Map<string, number>;
  firstChat: Map<string, number>;
};
type Kind = 'owner email' | 'copy' | 'webhook' | 'slack';
const KINDS: Kind[] = ['owner email', 'copy', 'webhook', 'slack'];

async function tally(run: Services, answers: Answer[]): Promise<Tally> {
  const ids = answers.flatMap((answer) => (answer.id ? [answer.id] : []));
  const accepted = new Map<string, number>();
  for (const item of run.ctx.sink.accepted) accepted.set(item.id, (accepted.get(item.id) ?? 0) + 1);
  const { rows: copies } = await run.ctx.sql.query<{ id: string; submission_id: string }>(
    'select id, submission_id from recipient_copies where submission_id = any($1::uuid[])',
    [ids],
  );
  const copiesOf = new Map<string, string[]>();
  for (const copy of copies) copiesOf.set(copy.submission_id, [...(copiesOf.get(copy.submission_id) ?? []), copy.id]);
  const hookPosts = new Map<string, number>();
  const firstHook = new Map<string, number>();
  for (const post of run.hooks.posts()) {
    hookPosts.set(post.webhookId, (hookPosts.get(post.webhookId) ?? 0) + 1);
    if (!firstHook.has(post.submission)) firstHook.set(post.submission, post.at);
  }
  const chatPosts = new Map<string, number>();
  const firstChat = new Map<string, number>();
  for (const post of run.ctx.chat.arrivals()) {
    chatPosts.set(post.submission, (chatPosts.get(post.submission) ?? 0) + 1);
    if (!firstChat.has(post.submission)) firstChat.set(post.submission, post.at);
  }
  const lost = { 'owner email': 0, copy: 0, webhook: 0, slack: 0 };
  const duplicated = { 'owner email': 0, copy: 0, webhook: 0, slack: 0 };
  const extra = (count: number | undefined) => Math.max(0, (count ?? 0) - 1);
  for (const id of ids) {
    const owner = accepted.get(`submission-${id}`);
    if (!owner) lost['owner email'] += 1;
    duplicated['owner email'] += extra(owner);
    const made = copiesOf.get(id) ?? [];
    lost.copy += RECIPIENTS.length - made.filter((copy) => accepted.has(`copy-${copy}`)).length;
    for (const copy of made) duplicated.copy += extra(accepted.get(`copy-${copy}`));
    if (!firstHook.has(id)) lost.webhook += 1;
    if (!firstChat.has(id)) lost.slack += 1;
    duplicated.slack += extra(chatPosts.get(id));
  }
  for (const count of hookPosts.values()) duplicated.webhook += extra(count);
  return { answered: ids.length, refused: answers.length - ids.length, lost, duplicated, firstHook, firstChat };
}

/** Polls until every answered submission's five deliveries arrived, or the deadline (epoch ms). */
async function waitForDrain(run: Services, answers: Answer[], deadline: number): Promise<boolean> {
  const ids = answers.flatMap((answer) => (answer.id ? [answer.id] : []));
  for (;;) {
    const done =
      run.ctx.sink.accepted.length >= ids.length * EMAILS_EACH && run.hooks.posts().length >= ids.length && run.ctx.chat.arrivals().length >= ids.length;
    if (done) {
      const counted = await tally(run, answers);
      if (KINDS.every((kind) => counted.lost[kind] === 0)) return true;
    }
    if (Date.now() > deadline) return false;
    await sleep(500);
  }
}

function countRows(scenario: string, counted: Tally, drained: boolean): Row[] {
  const rows: Row[] = [
    { scenario, metric: 'every delivery arrived within the wait (1: yes)', service: drained ? 1 : 0, baseline: Number.NaN, unit: 'x' },
    { scenario, metric: 'submissions answered 200', service: counted.answered, baseline: Number.NaN, unit: 'submissions' },
    { scenario, metric: 'requests not answered 200', service: counted.refused, baseline: Number.NaN, unit: 'requests' },
  ];
  for (const kind of KINDS) {
    rows.push(
      {
        scenario,
        metric: `${kind}: undelivered at the end`,
        service: counted.lost[kind],
        baseline: Number.NaN,
        unit: 'deliveries',
        target: { kind: '<=', value: 0 },
      },
      { scenario, metric: `${kind}: duplicated`, service: counted.duplicated[kind], baseline: Number.NaN, unit: 'deliveries' },
    );
  }
  return rows;
}

/** Run 1: the relay refusing for 65 s, Redis down from +8 to +13 s. */
async function outageTimings(ctx: Ctx, rspamd: RspamdService, hooks: WebhookReceiver, accessKey: string): Promise<void> {
  const scenario = `14 Fan-out, SMTP refusing +0 to +${SMTP_BACK_S} s, Redis SIGKILLed +${REDIS_DOWN_S} to +${REDIS_UP_S} s (${RATE}/s for ${LOAD_SECONDS} s)`;
  ctx.sink.setRefusing(true);
  const run = await startRun(ctx, rspamd, hooks, accessKey);
  let answers: Answer[];
  let redisDown = 0;
  let redisBack = 0;
  let drained: boolean;
  let smtpBack: number;
  try {
    const start = now();
    const timeline = (async () => {
      await at(start, REDIS_DOWN_S);
      redisDown = await killRedis(run);
      await at(start, REDIS_UP_S);
      redisBack = await restartRedis(run);
    })();
    answers = await load(run);
    await timeline;
    await at(start, SMTP_BACK_S);
    ctx.sink.setRefusing(false);
    smtpBack = now();
    ctx.log(`14 outage: the relay accepts again; waiting for the drain`);
    drained = await waitForDrain(run, answers, Date.now() + ctx.S.drainCapMs);
  } finally {
    ctx.sink.setRefusing(false);
    await stopRun(run, scenario);
  }
  const counted = await tally(run, answers);
  // The submissions answered 200 while Redis was down: no job of theirs was added.
  const during = answers.filter((answer) => answer.id && answer.answeredAt >= redisDown && answer.answeredAt <= redisBack).map((answer) => answer.id!);
  const delays = (first: Map<string, number>) =>
    during
      .flatMap((id) => (first.has(id) ? [first.get(id)! - redisBack] : []))
      .sort((a, b) => a - b)
      .map((ms) => ms / 1000);
  const hookDelays = delays(counted.firstHook);
  const chatDelays = delays(counted.firstChat);
  // The probe is the first email the relay accepts; the backlog follows it.
  const accepted = ctx.sink.accepted.filter((item) => item.at >= smtpBack).map((item) => item.at);
  const [probeAt, firstOfBacklog] = [accepted[0] ?? Number.NaN, accepted[1] ?? Number.NaN];
  const lastAt = accepted.at(-1) ?? Number.NaN;
  const drainRate = accepted.length > 1 ? (accepted.length - 1) / ((lastAt - probeAt) / 1000) : Number.NaN;
  const s = (ms: number) => ms / 1000;
  ctx.rows.push(
    ...countRows(scenario, counted, drained),
    { scenario, metric: 'submissions answered 200 while Redis was down', service: during.length, baseline: Number.NaN, unit: 'submissions' },
    { scenario, metric: "…their webhook POST after Redis's return, p50", service: percentile(hookDelays, 0.5), baseline: Number.NaN, unit: 's' },
    { scenario, metric: '…max', service: hookDelays.at(-1) ?? Number.NaN, baseline: Number.NaN, unit: 's', target: { kind: '<=', value: 20 } },
    { scenario, metric: "…their Slack POST after Redis's return, p50", service: percentile(chatDelays, 0.5), baseline: Number.NaN, unit: 's' },
    { scenario, metric: '…max', service: chatDelays.at(-1) ?? Number.NaN, baseline: Number.NaN, unit: 's', target: { kind: '<=', value: 20 } },
    { scenario, metric: "relay's return → the breaker's probe accepted", service: s(probeAt - smtpBack), baseline: Number.NaN, unit: 's' },
    { scenario, metric: 'probe → first email of the backlog', service: s(firstOfBacklog - probeAt), baseline: Number.NaN, unit: 's' },
    { scenario, metric: 'backlog drain rate (probe → last email)', service: drainRate, baseline: Number.NaN, unit: 'emails/s' },
    { scenario, metric: 'emails of the backlog', service: accepted.length, baseline: Number.NaN, unit: 'emails' },
  );
  ctx.log(
    `14 outage: ${during.length} submissions answered while Redis was down; webhook p50 ${percentile(hookDelays, 0.5).toFixed(1)} s, max ${(hookDelays.at(-1) ?? Number.NaN).toFixed(1)} s; ` +
      `Slack p50 ${percentile(chatDelays, 0.5).toFixed(1)} s, max ${(chatDelays.at(-1) ?? Number.NaN).toFixed(1)} s after its return; probe ${s(probeAt - smtpBack).toFixed(1)} s after the relay's, ` +
      `backlog's first ${s(firstOfBacklog - probeAt).toFixed(2)} s after it, ${drainRate.toFixed(0)} emails/s`,
  );
  if (!drained) ctx.notes.push(`14 outage: not every delivery arrived within ${ctx.S.drainCapMs / 1000} s of the relay's return`);
}

/** Run 2: workers, Redis and the API SIGKILLed and started again during the load, the relay accepting. */
async function chaosRun(ctx: Ctx, rspamd: RspamdService, hooks: WebhookReceiver, accessKey: string): Promise<void> {
  const scenario = `14 Fan-out chaos: workers SIGKILLed +4/+16/+21 s, Redis +${REDIS_DOWN_S} to +${REDIS_UP_S} s, API +18 s (${RATE}/s for ${LOAD_SECONDS} s)`;
  const run = await startRun(ctx, rspamd, hooks, accessKey, LEASES);
  let answers: Answer[];
  let drained: boolean;
  let generation = 3;
  try {
    const start = now();
    const timeline = (async () => {
      await at(start, 4);
      await killAndRestartWorker(run, 0, generation++, scenario);
      await at(start, REDIS_DOWN_S);
      await killRedis(run);
      await at(start, REDIS_UP_S);
      await restartRedis(run);
      await at(start, 16);
      await killAndRestartWorker(run, 1, generation++, scenario);
      await at(start, 18);
      await killAndRestartApi(run, scenario);
      await at(start, 21);
      await killAndRestartWorker(run, 0, generation++, scenario);
    })();
    answers = await load(run);
    await timeline;
    drained = await waitForDrain(run, answers, Date.now() + ctx.S.drainCapMs);
  } finally {
    await stopRun(run, scenario);
  }
  const counted = await tally(run, answers);
  ctx.rows.push(...countRows(scenario, counted, drained));
  ctx.log(
    `14 chaos: ${counted.answered} answered 200, ${counted.refused} not; lost ${KINDS.map((kind) => `${kind} ${counted.lost[kind]}`).join(', ')}; ` +
      `duplicated ${KINDS.map((kind) => `${kind} ${counted.duplicated[kind]}`).join(', ')}`,
  );
  if (!drained) ctx.notes.push(`14 chaos: not every delivery arrived within ${ctx.S.drainCapMs / 1000} s of the load's end`);
}
