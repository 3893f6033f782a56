// Fault tests with real worker processes: one killed with SIGKILL mid-backlog, and two workers
// sharing a backlog. Every submission must end `sent`; duplicates are counted and bounded.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ago, buildSubmission, onClient } from '../support/factories.ts';
import { eventually, startHarness, type Harness } from '../support/harness.ts';
import { emailStatusOf, sentCount } from '../support/rows.ts';
import { submitJson } from '../support/client.ts';
import { spawnWorker, type WorkerChild } from '../support/workers.ts';

const CONCURRENCY = 8;
let h: Harness;
let key: string;
let keyId: string;
const children: WorkerChild[] = [];
beforeAll(async () => {
  h = await startHarness({
    worker: false,
    env: {
      WORKER_CONCURRENCY: String(CONCURRENCY),
      JOB_LOCK_MS: '2000',
      CLAIM_LEASE_MS: '3000',
      RECONCILE_INTERVAL_MS: '1000',
      RECONCILE_AFTER_MS: '1000',
      EMAIL_RETRY_BACKOFF_MS: '100',
    },
  });
  const created = await h.createKey();
  key = created.key;
  keyId = created.id;
});
afterAll(async () => {
  for (const worker of children) await worker.kill();
  await h?.stop();
});

async function submitMany(count: number, label: string): Promise<string[]> {
  const ids: string[] = [];
  for (let start = 0; start < count; start += 25) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(25, count - start) }, (_, i) =>
        submitJson(h, { access_key: key, email: 'load@example.org', message: `${label} ${start + i}` }),
      ),
    );
    for (const response of batch) {
      expect(response.status).toBe(200);
      ids.push(response.json.submission_id);
    }
  }
  return ids;
}

const worker = async () => {
  const started = await spawnWorker(h.env);
  children.push(started);
  return started;
};

async function allSent(ids: string[], timeoutMs: number) {
  await eventually(async () => ((await sentCount(h, ids)) === ids.length ? true : undefined), timeoutMs, `all ${ids.length} submissions to be sent`);
}

function deliveriesOf(ids: string[]) {
  const wanted = new Set(ids.map((id) => `<submission-${id}@example.test>`));
  const seen = h.sink.messages.map((mail) => mail.parsed.messageId ?? '').filter((id) => wanted.has(id));
  return { total: seen.length, distinct: new Set(seen).size };
}

describe('a worker killed with SIGKILL mid-backlog', () => {
  it('loses nothing: every submission ends sent and reaches the SMTP sink', async () => {
    h.sink.delay(20);
    // Two workers share the backlog; the second carries on after the first is killed.
    const first = await worker();
    await worker();
    const ids = await submitMany(500, 'crash');
    await eventually(async () => (deliveriesOf(ids).distinct >= 120 ? true : undefined), 60_000, '120 deliveries');
    await first.kill();
    await worker();
    await allSent(ids, 90_000);

    const { total, distinct } = deliveriesOf(ids);
    expect(distinct).toBe(500);
    // A duplicate needs a send accepted by SMTP whose `sent` was never recorded: at most the
    // jobs the killed worker had in hand.
    console.info(`worker kill: ${total - distinct} duplicate deliveries out of 500`);
    expect(total - distinct).toBeLessThanOrEqual(CONCURRENCY);
  });
});

describe('two workers on one backlog', () => {
  it('delivers each submission exactly once', async () => {
    h.sink.delay(0);
    for (const child of children.splice(0)) await child.stop();
    const ids = await submitMany(300, 'pair');
    await Promise.all([worker(), worker()]);
    await allSent(ids, 60_000);
    const { total, distinct } = deliveriesOf(ids);
    expect(distinct).toBe(300);
    expect(total).toBe(300);
  });
});

describe('a worker killed while it runs the reconciler', () => {
  it('holds up reconciliation only until its lock (JOB_LOCK_MS) expires: another worker finds a jobless row', async () => {
    for (const child of children.splice(0)) await child.stop();
    const doomed = await worker();
    // The table lock stops the dying worker's reconciler mid-run, and the row it would find (no job
    // was ever added for it) becomes visible only when the lock is released, after the kill.
    const locker = new pg.Client({ connectionString: h.env.DATABASE_URL });
    await locker.connect();
    let id: string;
    try {
      await locker.query('begin');
      await locker.query('lock table submissions in access exclusive mode');
      // Inside the locking transaction, so that only the commit shows it.
      id = (await buildSubmission(onClient(locker, h.config.SECRET), { key: keyId, message: 'jobless', createdAt: ago({ seconds: 10 }) })).id;
      await eventually(
        async () => {
          const [row] = await h.sql<{ n: number }>(
            `select count(*)::int as n from pg_stat_activity
            where datname = current_database() and wait_event_type = 'Lock' and query ilike '%from submissions%'`,
          );
          return row!.n > 0 ? true : undefined;
        },
        15_000,
        'the reconciler to wait for the table lock',
      );
      await doomed.kill();
      await worker();
      await locker.query('commit');
    } finally {
      await locker.end();
    }
    // BullMQ's own lock would keep the dead run "active" (and, at a global concurrency of 1, every
    // periodic job waiting) for 30 s plus a 30 s stalled check.
    await eventually(
      async () => ((await emailStatusOf(h, id)) === 'sent' ? true : undefined),
      15_000,
      'the jobless row to be found and sent by the other worker',
    );
  });
});
