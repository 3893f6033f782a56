// Partitions between hosts. The API, two workers, PostgreSQL and Redis each run on a host of their
// own (a network namespace with its own address, test/support/netns.ts); the SMTP sink and S3 run
// in the test's process, which joins the same bridge. A cut link makes connections hang rather than
// be refused, as between real machines: a job lock expires while its holder still works, and a
// connection that is never answered must be noticed. For each cut: every submission answered 200
// is delivered, duplicates stay within the at-least-once window, and no process is restarted.
// Needs root (network namespaces); for another user every test fails, saying so.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_PG_WAITS } from '../../src/api/unavailable.ts';
import { waitForOutput } from '../../src/local/processes.ts';
import { ensureRedisServer, LOCAL_S3_CREDENTIALS, startS3, stopChild, type LocalService } from '../../src/local/services.ts';
import { createOrm, migrate } from '../../src/shared/infra/db/orm.ts';
import { entities } from '../../src/shared/schema.ts';
import { REDIS_SOCKET_TIMEOUT_MS } from '../../src/shared/infra/queues/redis.ts';
import { createKeyVault } from '../../src/shared/infra/secrets.ts';
import { eventually, insertKey, TEST_SECRET } from '../support/harness.ts';
import { createNetwork, type Network } from '../support/netns.ts';
import { startSmtpSink, type SmtpSink } from '../support/smtp-sink.ts';
import { spawnApi, spawnWorker, type Launcher, type WorkerChild } from '../support/workers.ts';
import { sleep } from '../support/sleep.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
type HostName = 'api' | 'worker1' | 'worker2' | 'postgres' | 'redis';
type WorkerName = 'worker1' | 'worker2';
/** The last byte of each host's address; the test's own process is .1. */
const OCTETS: Record<HostName, number> = { api: 10, worker1: 21, worker2: 22, postgres: 30, redis: 31 };

const CONCURRENCY = 8;
/** Small, so that a cut outlasts the job lock within seconds. */
const JOB_LOCK_MS = 5_000;
/**
 * Longer than a worker may wait for the SMTP server's answer after a cut (30 s of silence,
 * src/shared/infra/mail.ts), as the default 5 min is: a claim that ran out while its worker still
 * waited would be sent again by another worker, and the history would miss the first attempt.
 * Longer too than the PostgreSQL cut below and the time its connections take to resume.
 */
const CLAIM_LEASE_MS = 40_000;
const POSTGRES_CUT_MS = 10_000;
/**
 * How long the first test cuts a worker off at least, less than the lease: past the SMTP server's
 * TCP retransmission at about 13 s (their intervals double from about 0.2 s), so that an answer the
 * cut swallowed comes back only with the next, at about 27 s: long after the link is back, within
 * the worker's wait.
 */
const SHORT_WORKER_CUT_MS = 16_000;
/** How long the test's client waits for an answer: past every bound the service sets itself. */
const CLIENT_TIMEOUT_MS = 20_000;
/** The API's enqueue gives up after 2 s (src/api/submissions/enqueue.ts): a request that waited for Redis took at least that. */
const ENQUEUE_WAIT_MS = 2_000;

let net: Network<HostName>;
let dir: string;
let postgres: WorkerChild;
let redis: LocalService;
let s3: LocalService;
let sink: SmtpSink;
let api: WorkerChild;
let workers: Record<WorkerName, WorkerChild>;
let db: pg.Pool;
let apiUrl: string;
let key: string;
/** The test's own connection to Redis, to look at the jobs. */
let queueRedis: Redis;
const QUEUE_PREFIX = '{partitions}';
const jobKey = (id: string) => `${QUEUE_PREFIX}:deliveries:${id}`;

beforeAll(async () => {
  // First: without root this says why nothing can run.
  net = createNetwork(OCTETS);
  dir = await mkdtemp(path.join(tmpdir(), 'cfs-partitions-'));
  const on =
    (host: HostName): Launcher =>
    (command, args, options) =>
      net.spawn(host, command, args, options);

  postgres = await startOn('postgres', 'PostgreSQL', /^ready /m, process.execPath, [
    path.join(ROOT, 'test/support/postgres-host.ts'),
    path.join(dir, 'postgres'),
    net.hosts.postgres.address,
  ]);
  // The host trusts its network (test/support/postgres-host.ts): no password, so none is a published sample.
  const databaseUrl = `postgres://postgres@${net.hosts.postgres.address}:5432/contact_form`;
  const redisServer = await startOn('redis', 'redis-server', /Ready to accept connections/, ensureRedisServer(), [
    '--port',
    '6379',
    '--bind',
    net.hosts.redis.address,
    '--protected-mode',
    'no',
    '--save',
    '',
    '--appendonly',
    'no',
    '--maxmemory-policy',
    'noeviction',
  ]);
  redis = { name: 'redis', url: `redis://${net.hosts.redis.address}:6379`, stop: redisServer.stop };
  queueRedis = new Redis(redis.url, { maxRetriesPerRequest: 1 });
  // startS3 makes the bucket.
  s3 = await startS3({ dir: path.join(dir, 's3'), bucket: 'cfs-partitions', address: net.self });
  sink = await startSmtpSink(0, net.self);
  sink.delay(200); // a send takes a while, so that each worker always has some in hand

  const orm = await createOrm(databaseUrl, entities, 2);
  await migrate(orm);
  key = (await insertKey(orm, createKeyVault(TEST_SECRET))).key;
  await orm.close();
  db = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  db.on('error', () => undefined);

  const env: Record<string, string> = {
    DATABASE_URL: databaseUrl,
    REDIS_URL: redis.url,
    S3_ENDPOINT: s3.url,
    S3_BUCKET: 'cfs-partitions',
    S3_ACCESS_KEY_ID: LOCAL_S3_CREDENTIALS.accessKeyId,
    S3_SECRET_ACCESS_KEY: LOCAL_S3_CREDENTIALS.secretAccessKey,
    SMTP_URL: sink.url,
    MAIL_FROM: 'Contact Form <forms@example.test>',
    SECRET: TEST_SECRET,
    QUEUE_PREFIX,
    WORKER_CONCURRENCY: String(CONCURRENCY),
    JOB_LOCK_MS: String(JOB_LOCK_MS),
    CLAIM_LEASE_MS: String(CLAIM_LEASE_MS),
    RECONCILE_INTERVAL_MS: '1000',
    RECONCILE_AFTER_MS: '2000',
    EMAIL_RETRY_BACKOFF_MS: '500',
    EMAIL_RETRY_MAX_BACKOFF_MS: '2000',
    RATE_LIMIT_MAX: '1000000',
    UNCONFIRMED_EMAILS_PER_HOUR: '1000000',
  };

  apiUrl = `http://${net.hosts.api.address}:3000`;
  api = await spawnApi({ ...env, HOST: net.hosts.api.address, PORT: '3000', PUBLIC_URL: apiUrl }, on('api'));
  workers = {
    worker1: await spawnWorker({ ...env, HOST: net.hosts.worker1.address }, on('worker1')),
    worker2: await spawnWorker({ ...env, HOST: net.hosts.worker2.address }, on('worker2')),
  };
}, 120_000);

afterAll(async () => {
  // Whatever a failed test left cut is plugged back in, so that every process can stop cleanly.
  if (net) {
    for (const host of Object.keys(OCTETS) as HostName[]) net.heal(host);
    net.healBetween('api', 'redis');
  }
  for (const child of [api, workers?.worker1, workers?.worker2]) await child?.stop();
  await db?.end().catch(() => undefined);
  queueRedis?.disconnect();
  await sink?.close();
  await s3?.stop();
  await redis?.stop();
  await postgres?.stop();
  net?.remove();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** A server started on a host, once it prints `ready`. */
async function startOn(host: HostName, name: string, ready: RegExp, command: string, args: string[]): Promise<WorkerChild> {
  const child = net.spawn(host, command, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  await waitForOutput(child, ready, `${name} on its host`, 60_000);
  child.stdout!.resume();
  child.stderr!.resume();
  return { child, output: () => '', stop: () => stopChild(child, 'SIGTERM', 15_000), kill: () => stopChild(child, 'SIGKILL') };
}

type Answer = { status: number; retryAfter: string | null; body: any; startedAt: number; ms: number };
type Outcome = Answer | { error: string; startedAt: number; ms: number };

async function submitOnce(message: string): Promise<Outcome> {
  const startedAt = Date.now();
  try {
    const response = await fetch(`${apiUrl}/api/contact-api/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ access_key: key, email: 'visitor@example.org', message }),
      signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS),
    });
    const body = await response.json();
    return { status: response.status, retryAfter: response.headers.get('retry-after'), body, startedAt, ms: Date.now() - startedAt };
  } catch (error) {
    return { error: String(error), startedAt, ms: Date.now() - startedAt };
  }
}

/** Visitors submitting until stopped: `clients` loops, `pauseMs` apart; bounded in count and time. */
function visitors(label: string, clients = 4, pauseMs = 50) {
  const outcomes: Outcome[] = [];
  let running = true;
  const deadline = Date.now() + 120_000;
  const done = Promise.all(
    Array.from({ length: clients }, async (_, client) => {
      for (let i = 0; running && i < 2_000 && Date.now() < deadline; i++) {
        outcomes.push(await submitOnce(`${label} ${client}.${i}`));
        await sleep(pauseMs);
      }
    }),
  );
  return {
    outcomes,
    answers: () => outcomes.filter((outcome): outcome is Answer => 'status' in outcome),
    /** The submissions answered 200: saved, so they must be delivered. */
    accepted: () => outcomes.flatMap((outcome) => ('status' in outcome && outcome.status === 200 ? [outcome.body.submission_id as string] : [])),
    async stop() {
      running = false;
      await done;
    },
  };
}

const messageId = (id: string) => `<submission-${id}@example.test>`;
const deliveredFrom = (address: string) => sink.messages.filter((mail) => mail.client === address);

/** How many times the sink received each of these submissions' emails. */
function deliveries(ids: string[]): Map<string, number> {
  const wanted = new Map(ids.map((id) => [messageId(id), id]));
  const counts = new Map(ids.map((id) => [id, 0]));
  for (const mail of sink.messages) {
    const id = wanted.get(mail.parsed.messageId ?? '');
    if (id) counts.set(id, counts.get(id)! + 1);
  }
  return counts;
}

async function statuses(ids: string[]): Promise<Map<string, string>> {
  const { rows } = await db.query<{ id: string; email_status: string }>('select id, email_status from submissions where id = any($1::uuid[])', [ids]);
  return new Map(rows.map((row) => [row.id, row.email_status]));
}

async function allSent(ids: string[], timeoutMs = 90_000): Promise<void> {
  await eventually(
    async () => {
      const found = await statuses(ids);
      return ids.every((id) => found.get(id) === 'sent') ? true : undefined;
    },
    timeoutMs,
    `all ${ids.length} accepted submissions to be sent`,
  );
}

type Attempt = { attempt: number; outcome: string; worker: string; response: string | null };

/** A row's attempts as the delivery history has them: number (a gap is an attempt it misses), outcome, worker, answer. */
async function attemptsOf(id: string): Promise<Attempt[]> {
  const { rows } = await db.query<Attempt>('select attempt, outcome, worker, response from delivery_attempts where submission_id = $1 order by attempt', [id]);
  return rows;
}

/** How many attempts each row's delivery history has. */
async function attemptCounts(ids: string[]): Promise<Map<string, number>> {
  const { rows } = await db.query<{ id: string; attempts: number }>(
    'select submission_id as id, count(*)::int as attempts from delivery_attempts where submission_id = any($1::uuid[]) group by submission_id',
    [ids],
  );
  return new Map(rows.map((row) => [row.id, row.attempts]));
}

/** The rows a worker was sending when its host was cut at `cutAt`: claimed before, still `sending` now. */
async function heldSince(cutAt: number): Promise<string[]> {
  // By now the other worker has long finished whatever it had claimed before the cut (its sends take 0.2 s).
  await sleep(3_000);
  const { rows } = await db.query<{ id: string }>(
    "select id from submissions where email_status = 'sending' and claimed_at < to_timestamp($1::double precision / 1000)",
    [cutAt],
  );
  return rows.map((row) => row.id);
}

/** Every process still runs: none was restarted or died. */
function expectNoRestart(): void {
  for (const child of [api, workers.worker1, workers.worker2, postgres]) {
    expect(child.child.exitCode).toBeNull();
    expect(child.child.signalCode).toBeNull();
  }
}

async function ready(): Promise<boolean> {
  const response = await fetch(`${apiUrl}/readyz`, { signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS) }).catch(() => undefined);
  return response?.status === 200;
}

/** Submits `count` at once, 25 at a time: a backlog that keeps both workers busy. All must be answered 200. */
async function backlog(count: number, label: string): Promise<string[]> {
  const ids: string[] = [];
  for (let start = 0; start < count; start += 25) {
    const batch = await Promise.all(Array.from({ length: Math.min(25, count - start) }, (_, i) => submitOnce(`${label} ${start + i}`)));
    for (const outcome of batch) {
      expect(outcome).toMatchObject({ status: 200 });
      ids.push((outcome as Answer).body.submission_id);
    }
  }
  return ids;
}

/** Waits until worker1 has sent `count` of these. */
async function worker1Delivers(ids: string[], count: number, timeoutMs = 30_000): Promise<void> {
  const wanted = new Set(ids.map(messageId));
  await eventually(
    async () => (deliveredFrom(net.hosts.worker1.address).filter((mail) => wanted.has(mail.parsed.messageId ?? '')).length >= count ? true : undefined),
    timeoutMs,
    `worker1 to deliver ${count} emails`,
  ).catch((error: unknown) => {
    throw new Error(`${(error as Error).message}; worker1's log ends:\n${workers.worker1.output().slice(-3_000)}`);
  });
}

/**
 * Submits 50 at a time until worker1 has delivered 10 of them: back from a long cut, it reconnects
 * at its own pace, and worker2 alone would drain a single backlog first. At most 30 rounds, a
 * second or so each.
 */
async function feedUntilWorker1Delivers(label: string): Promise<string[]> {
  const ids: string[] = [];
  for (let round = 0; round < 30; round++) {
    ids.push(...(await backlog(50, `${label} ${round}`)));
    if (
      await worker1Delivers(ids, 10, 1_000).then(
        () => true,
        () => false,
      )
    )
      return ids;
  }
  await worker1Delivers(ids, 10);
  return ids;
}

describe('a worker host cut off mid-delivery', () => {
  it('for longer than the job lock but not the claim lease: the other worker takes its jobs but sends none of them, and each email goes out once unless the cut swallowed its answer', async () => {
    const ids = await backlog(300, 'worker cut, short');
    await worker1Delivers(ids, 10);
    net.cut('worker1');
    const cutAt = Date.now();
    const held = await heldSince(cutAt);
    expect(held.length, 'worker1 had emails in hand when cut off').toBeGreaterThan(0);
    // The lock expires and the next stalled check (every JOB_LOCK_MS) hands the jobs to worker2,
    // whose claims fail (the rows are claimed, and their lease still runs): its jobs end.
    await eventually(async () => ((await queueRedis.exists(...held.map(jobKey))) === 0 ? true : undefined), 4 * JOB_LOCK_MS, "worker2 to take worker1's jobs");
    expect(Date.now() - cutAt).toBeGreaterThan(JOB_LOCK_MS);
    expect(Date.now() - cutAt).toBeLessThan(CLAIM_LEASE_MS);
    const whileCut = await statuses(held);
    expect(
      [...whileCut.values()].every((status) => status === 'sending'),
      'no row worker1 held was sent by another while it was cut off',
    ).toBe(true);
    await sleep(SHORT_WORKER_CUT_MS - (Date.now() - cutAt));
    expect(Date.now() - cutAt).toBeLessThan(CLAIM_LEASE_MS);
    net.heal('worker1');

    // Worker1's sends complete when the link is back, or with the answers the cut swallowed, which
    // TCP retransmits up to as long again later: once each. One exception is SMTP's own
    // at-least-once window: the server took a message, its answer was lost in the cut, and TCP's
    // backed-off retransmission came after worker1's SMTP socket timeout. That attempt is recorded as
    // failed, and its retry is a second copy, of a message worker1 held.
    await allSent(ids);
    const notOnce = await Promise.all(
      [...deliveries(ids)].filter(([, n]) => n !== 1).map(async ([id, n]) => ({ id, copies: n, held: held.includes(id), attempts: await attemptsOf(id) })),
    );
    // An attempt that ended without the server's acceptance (`retrying` or `failed`): its answer was lost.
    const lostAnswer = (row: (typeof notOnce)[number]) => row.copies === 2 && row.held && row.attempts.some((attempt) => attempt.outcome !== 'sent');
    expect(
      notOnce.filter((row) => !lostAnswer(row)),
      'each accepted submission delivered exactly once, or twice after an attempt whose answer was lost',
    ).toEqual([]);
    // The history the owner sees counts every email that went out.
    const attempts = await attemptCounts(ids);
    expect(
      [...deliveries(ids)].filter(([id, copies]) => copies > (attempts.get(id) ?? 0)).map(([id, copies]) => ({ id, copies, attempts: attempts.get(id) ?? 0 })),
      'no submission delivered more often than its history has attempts',
    ).toEqual([]);
    expectNoRestart();
  }, 120_000);

  it('for longer than the claim lease: the other worker sends its emails meanwhile, and it comes back; duplicates at most the emails it had in hand', async () => {
    const ids = await backlog(300, 'worker cut, long');
    await worker1Delivers(ids, 10);
    net.cut('worker1');
    const cutAt = Date.now();
    const held = await heldSince(cutAt);
    expect(held.length, 'worker1 had emails in hand when cut off').toBeGreaterThan(0);
    // Once the lease has run out, the reconciler queues the rows again and worker2 sends them.
    await allSent(held, CLAIM_LEASE_MS + 30_000);
    expect(Date.now() - cutAt).toBeGreaterThanOrEqual(CLAIM_LEASE_MS);
    for (const id of held) {
      const copies = sink.messages.filter((mail) => mail.parsed.messageId === messageId(id));
      expect(
        copies.some((mail) => mail.client === net.hosts.worker2.address),
        id,
      ).toBe(true);
    }
    net.heal('worker1');
    const cutForS = Math.round((Date.now() - cutAt) / 1000);

    // Worker1 takes new work again, without a restart.
    const more = await feedUntilWorker1Delivers('after the long cut');
    const accepted = [...ids, ...more];
    await allSent(accepted);
    const counts = deliveries(accepted);
    expect(
      [...counts.values()].every((n) => n >= 1),
      'every accepted submission delivered',
    ).toBe(true);
    // The at-least-once window: an email worker1 had handed to the SMTP server before the cut is
    // accepted when the link is back, after worker2 sent it. Only those, so at most its concurrency.
    const duplicated = [...counts].filter(([, n]) => n > 1).map(([id]) => id);
    console.info(`worker host cut for ${cutForS} s: ${duplicated.length} duplicate deliveries of ${accepted.length}, ${held.length} emails in its hands`);
    expect(
      duplicated.every((id) => held.includes(id)),
      'only emails worker1 had in hand are delivered twice',
    ).toBe(true);
    expect(duplicated.length).toBeLessThanOrEqual(CONCURRENCY);
    expect(Math.max(...counts.values())).toBeLessThanOrEqual(2);
    expectNoRestart();
  }, 200_000);
});

describe('the API cut off from Redis', () => {
  it('answers 200 for every submission it commits, stops waiting for Redis once it has noticed, and all are delivered', async () => {
    const load = visitors('redis cut');
    await sleep(1_000);
    net.cutBetween('api', 'redis');
    const cutAt = Date.now();
    // The API takes its Redis connection for dead after REDIS_SOCKET_TIMEOUT_MS.producer without an answer.
    const noticedBy = cutAt + REDIS_SOCKET_TIMEOUT_MS.producer + 2_000;
    await sleep(noticedBy - Date.now() + 5_000);
    expect(await ready()).toBe(false);
    net.healBetween('api', 'redis');
    const healedAt = Date.now();
    await eventually(async () => ((await ready()) ? true : undefined), 20_000, 'the API to reach Redis again');
    await load.stop();

    const answers = load.answers();
    expect(answers.length).toBe(load.outcomes.length);
    expect(
      answers.every((answer) => answer.status === 200 && answer.body.email_status === 'queued'),
      'every submission answered 200, queued',
    ).toBe(true);
    // Noticed: from then on a submission is saved and answered without waiting for Redis.
    const afterNoticed = answers.filter((answer) => answer.startedAt >= noticedBy && answer.startedAt + answer.ms < healedAt);
    expect(Math.max(...afterNoticed.map((answer) => answer.ms)), 'the longest answer once the dead connection was noticed').toBeLessThan(ENQUEUE_WAIT_MS);
    expect(afterNoticed.length, 'submissions answered between then and the heal').toBeGreaterThan(10);

    const accepted = load.accepted();
    await allSent(accepted);
    const counts = deliveries(accepted);
    // The workers never lost Redis or PostgreSQL: nothing is sent twice.
    expect(
      [...counts.values()].every((n) => n === 1),
      'each accepted submission delivered exactly once',
    ).toBe(true);
    expectNoRestart();
  }, 120_000);
});

describe('the PostgreSQL host cut off for 10 s', () => {
  it('answers 200 only for committed rows and 503 with Retry-After within its stated waits, then recovers and delivers every 200', async () => {
    const load = visitors('postgres cut');
    await sleep(1_000);
    net.cut('postgres');
    const cutAt = Date.now();
    await sleep(POSTGRES_CUT_MS);
    net.heal('postgres');
    const healedAt = Date.now();
    await eventually(
      async () => {
        const outcome = await submitOnce('after the cut');
        return 'status' in outcome && outcome.status === 200 ? true : undefined;
      },
      20_000,
      'a 200 once PostgreSQL is reachable again',
    );
    await load.stop();

    const answers = load.answers();
    expect(
      load.outcomes.filter((outcome) => 'error' in outcome),
      'no request hangs past the client timeout',
    ).toEqual([]);
    expect(new Set(answers.map((answer) => answer.status))).toEqual(new Set([200, 503]));
    for (const answer of answers.filter((answer) => answer.status === 503)) {
      expect(Number(answer.retryAfter)).toBeGreaterThanOrEqual(1);
      expect(answer.body).toMatchObject({ success: false, errors: { __all__: ['The service is unavailable for a moment. Please try again in 5 seconds.'] } });
    }
    const duringCut = answers.filter((answer) => answer.startedAt >= cutAt && answer.startedAt < healedAt);
    expect(
      duringCut.some((answer) => answer.status === 503),
      'a 503 while PostgreSQL cannot be reached',
    ).toBe(true);
    // Noticed: no request waits longer than a connection and a statement may take (API_PG_WAITS),
    // plus 3 s, by which timers and the event loop run late on a 2-core machine with two busy loops beside it.
    const stated = API_PG_WAITS.connectMs + API_PG_WAITS.queryMs;
    expect(Math.max(...answers.map((answer) => answer.ms)), 'the longest answer, in ms').toBeLessThan(stated + 3_000);

    // Every 200 is a committed row, and is delivered by the workers that waited through the cut.
    const accepted = load.accepted();
    expect((await statuses(accepted)).size).toBe(accepted.length);
    await allSent(accepted);
    const counts = deliveries(accepted);
    // Their `sent` writes waited for PostgreSQL rather than fail: nothing is sent twice.
    expect(
      [...counts.values()].every((n) => n === 1),
      'each accepted submission delivered exactly once',
    ).toBe(true);
    expect(await ready()).toBe(true);
    expectNoRestart();
  }, 120_000);
});
