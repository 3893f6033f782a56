// Redis behind Sentinel (REDIS_SENTINELS): a primary, a replica and three sentinels on loopback.
// The primary is killed with SIGKILL while submissions arrive and workers deliver; the sentinels
// promote the replica and the API and the workers follow it. Then the same with a replica that had
// fallen behind: the jobs Redis had acknowledged and lost are found in PostgreSQL by the reconciler.
import { afterEach, expect, it } from 'vitest';
import { submitJson } from '../support/client.ts';
import { abnormalAnswers, emailsPerSubmission, submitUntil, waitForAllSent } from '../support/load.ts';
import { eventually, startHarness, type Harness } from '../support/harness.ts';
import { startSentinelSetup, SENTINEL_MASTER, type SentinelSetup } from '../support/redis-sentinel.ts';
import { sentCount } from '../support/rows.ts';

/** Submissions answered 200 before the kill, and again after the switch. */
const PER_PHASE = 100;

let setup: SentinelSetup | undefined;
let h: Harness | undefined;
afterEach(async () => {
  try {
    await h?.stop();
  } finally {
    await setup?.stop();
    [h, setup] = [undefined, undefined];
  }
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

it('follows a failover under a load: every 200 delivered, every answer 200 or 503 with Retry-After', async () => {
  const { h, setup } = await start();
  const { key } = await h.createKey();
  let killedAt = 0;
  const { answers, errors } = await submitUntil(h, key, 8, async (load) => {
    // A load first, then the primary dies mid-load, and the load goes on past the switch. Counted,
    // not timed: a busy machine answers fewer in the same time.
    await eventually(async () => (load.accepted() >= PER_PHASE ? true : undefined), 120_000, `${PER_PHASE} submissions before the kill`);
    killedAt = Date.now();
    await setup.killPrimary();
    await eventually(async () => ((await setup.currentPrimaryPort()) === setup.replicaPort ? true : undefined), 60_000, 'the replica promoted');
    const atSwitch = load.accepted();
    await eventually(async () => (load.accepted() >= atSwitch + PER_PHASE ? true : undefined), 120_000, `${PER_PHASE} submissions after the switch`);
  });
  expect(killedAt).toBeGreaterThan(0);

  expect(errors).toEqual([]);
  expect(abnormalAnswers(answers)).toEqual([]);
  const ids = answers.filter((answer) => answer.status === 200).map((answer) => answer.id!);
  await waitForAllSent(h, ids, 60_000);
  const emails = emailsPerSubmission(h);
  expect(ids.filter((id) => !emails.has(id))).toEqual([]);
  // At most 0.1 % of them twice: the claim fences a job run again after the switch.
  const duplicated = ids.filter((id) => emails.get(id)! > 1);
  expect(duplicated.length).toBeLessThanOrEqual(Math.floor(ids.length / 1_000));
}, 360_000);

it('delivers what a failover lost: the replica had fallen behind, and the reconciler finds the rows', async () => {
  const { h, setup } = await start();
  const { key } = await h.createKey();
  // No worker takes the jobs meanwhile: they exist only on the primary.
  for (const worker of h.workers.splice(0)) await worker.shutdown.run();
  await setup.holdReplication();
  const lost: string[] = [];
  for (let n = 0; n < 20; n += 1) {
    // A busy machine may answer 503 with Retry-After (PostgreSQL slow): the client sends again.
    const answer = await eventually(async () => {
      const tried = await submitJson(h, { access_key: key, email: 'visitor@example.org', message: `written before the failover, ${n}` });
      if (tried.status === 503 && tried.headers.get('retry-after')) return undefined;
      return tried;
    });
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
