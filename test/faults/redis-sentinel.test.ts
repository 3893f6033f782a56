// Redis behind Sentinel (REDIS_SENTINELS): a primary, a replica and three sentinels on loopback.
// The primary is killed with SIGKILL while submissions arrive and workers deliver; the sentinels
// promote the replica and the API and the workers follow it. Then the same with a replica that had
// fallen behind: the jobs Redis had acknowledged and lost are found in PostgreSQL by the reconciler.
import { afterEach, expect, it } from 'vitest';
import { submitJson } from '../support/client.ts';
import { eventually, startHarness, type Harness } from '../support/harness.ts';
import { startSentinelSetup, SENTINEL_MASTER, type SentinelSetup } from '../support/redis-sentinel.ts';
import { sentCount } from '../support/rows.ts';

let setup: SentinelSetup | undefined;
let h: Harness | undefined;
afterEach(async () => {
  await h?.stop();
  await setup?.stop();
  [h, setup] = [undefined, undefined];
});

async function start(): Promise<{ h: Harness; setup: SentinelSetup }> {
  setup = await startSentinelSetup();
  h = await startHarness({
    env: {
      REDIS_URL: setup.url,
      REDIS_SENTINELS: setup.sentinels,
      REDIS_SENTINEL_MASTER: SENTINEL_MASTER,
      // Rows whose job Redis lost are enqueued again 5 s after they were written.
      RECONCILE_INTERVAL_MS: '1000',
      RECONCILE_AFTER_MS: '5000',
    },
  });
  return { h, setup };
}

type Answer = { status: number; retryAfter?: string | null; id?: string };

/** Submissions from `clients` loops until `until` resolves; every answer, or the error instead of one. */
async function submitUntil(h: Harness, key: string, clients: number, until: Promise<unknown>): Promise<{ answers: Answer[]; errors: string[] }> {
  const answers: Answer[] = [];
  const errors: string[] = [];
  let going = true;
  void until.finally(() => (going = false));
  await Promise.all(
    Array.from({ length: clients }, async (_, client) => {
      for (let n = 0; going; n += 1) {
        try {
          const answer = await submitJson(h, { access_key: key, email: 'visitor@example.org', message: `client ${client}, message ${n}` });
          answers.push({ status: answer.status, retryAfter: answer.headers.get('retry-after'), id: answer.json?.submission_id });
        } catch (error) {
          errors.push((error as Error).message);
        }
      }
    }),
  );
  return { answers, errors };
}

/** How many emails the sink received for each submission. */
function emailsPerSubmission(h: Harness): Map<string, number> {
  const counts = new Map<string, number>();
  for (const mail of h.sink.messages) {
    const id = /<submission-([0-9a-f-]+)@/.exec(mail.parsed.messageId ?? '')?.[1];
    if (id) counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return counts;
}

it('follows a failover under a load: every 200 delivered, every answer 200 or 503 with Retry-After', async () => {
  const { h, setup } = await start();
  const { key } = await h.createKey();
  let killedAt = 0;
  const failover = (async () => {
    // A load first, then the primary dies mid-load, and the load goes on past the switch.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    killedAt = Date.now();
    await setup.killPrimary();
    await eventually(async () => ((await setup.currentPrimaryPort()) === setup.replicaPort ? true : undefined), 30_000, 'the replica promoted');
    await new Promise((resolve) => setTimeout(resolve, 3_000));
  })();
  const { answers, errors } = await submitUntil(h, key, 8, failover);
  await failover;
  expect(killedAt).toBeGreaterThan(0);

  expect(errors).toEqual([]);
  expect(answers.filter((answer) => !(answer.status === 200 || (answer.status === 503 && answer.retryAfter)))).toEqual([]);
  const ids = answers.filter((answer) => answer.status === 200).map((answer) => answer.id!);
  expect(ids.length).toBeGreaterThan(50);
  await eventually(async () => ((await sentCount(h, ids)) === ids.length ? true : undefined), 60_000, 'every accepted submission sent');
  const emails = emailsPerSubmission(h);
  expect(ids.filter((id) => !emails.has(id))).toEqual([]);
  // At most 0.1 % of them twice: the claim fences a job run again after the switch.
  const duplicated = ids.filter((id) => emails.get(id)! > 1);
  expect(duplicated.length).toBeLessThanOrEqual(Math.floor(ids.length / 1_000));
}, 180_000);

it('delivers what a failover lost: the replica had fallen behind, and the reconciler finds the rows', async () => {
  const { h, setup } = await start();
  const { key } = await h.createKey();
  // No worker takes the jobs meanwhile: they exist only on the primary.
  for (const worker of h.workers.splice(0)) await worker.shutdown.run();
  setup.holdReplication();
  const lost: string[] = [];
  for (let n = 0; n < 20; n += 1) {
    const answer = await submitJson(h, { access_key: key, email: 'visitor@example.org', message: `written before the failover, ${n}` });
    expect(answer.status).toBe(200);
    lost.push(answer.json.submission_id);
  }
  await setup.killPrimary();
  await eventually(async () => ((await setup.currentPrimaryPort()) === setup.replicaPort ? true : undefined), 30_000, 'the replica promoted');
  // The new primary never got those jobs.
  const { Redis } = await import('ioredis');
  const promoted = new Redis({ port: setup.replicaPort, host: '127.0.0.1', maxRetriesPerRequest: 1 });
  try {
    const jobKeys = await promoted.keys(`${h.config.QUEUE_PREFIX}:*`);
    expect(jobKeys.filter((name) => lost.some((id) => name.endsWith(`:${id}`)))).toEqual([]);
  } finally {
    promoted.disconnect();
  }

  await h.startWorker();
  await eventually(async () => ((await sentCount(h, lost)) === lost.length ? true : undefined), 60_000, 'the lost jobs found and delivered');
  const emails = emailsPerSubmission(h);
  expect(lost.map((id) => emails.get(id))).toEqual(lost.map(() => 1));
}, 180_000);
