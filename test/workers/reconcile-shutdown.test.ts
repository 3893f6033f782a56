// The reconciler picks up rows that have no job; a worker's SIGTERM finishes the job in hand, and a
// second SIGINT stops it at once, the row then delivered by another worker.
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EmailStatus } from '../../src/shared/deliveries/delivery-columns.ts';
import { ago, buildSubmission, buildSubmissions, fromNow, removeSubmissions } from '../support/factories.ts';
import { eventually, startHarness, type Harness } from '../support/harness.ts';
import { sentCount } from '../support/rows.ts';
import { runReconciler } from '../support/reconciler.ts';
import { submitJson } from '../support/client.ts';
import { spawnWorker, type WorkerChild } from '../support/workers.ts';
import { Queue, Worker } from 'bullmq';
import { createLogger } from '../../src/shared/infra/log.ts';
import { closeRedis, createRedis } from '../../src/shared/infra/queues/redis.ts';
import { type DeliveryJob } from '../../src/shared/deliveries/delivery-jobs.ts';
import { createHousekeepingQueue } from '../../src/shared/infra/queues/queues.ts';
import { reconcile, RECONCILE_BATCH } from '../../src/workers/housekeeping/reconcile.ts';
import { autoresponsePolicyOf } from '../../src/shared/autoresponses/autoresponses.ts';
import { sleep } from '../support/sleep.ts';

let h: Harness;
let keyId: string;
let key: string;
beforeAll(async () => {
  h = await startHarness({ env: { RECONCILE_INTERVAL_MS: '300', RECONCILE_AFTER_MS: '1000', CLAIM_LEASE_MS: '2000' } });
  const created = await h.createKey();
  keyId = created.id;
  key = created.key;
});
afterAll(() => h?.stop());

const statusOf = async (id: string) => (await h.sql<any>('select email_status, email_attempts from submissions where id = $1', [id]))[0];
/** A row committed 10 s ago whose job was never added (or whose worker died holding its claim). */
const insertRow = async (status: EmailStatus, claimedSecondsAgo: number | null) =>
  (
    await buildSubmission(h, {
      key: keyId,
      message: 'lost',
      status,
      claimedAt: claimedSecondsAgo === null ? null : ago({ seconds: claimedSecondsAgo }),
      createdAt: ago({ seconds: 10 }),
    })
  ).id;

/** The emails of a submission the SMTP sink received. */
const mailsFor = (id: string) => h.sink.messages.filter((mail) => mail.parsed.messageId === `<submission-${id}@example.test>`);

describe('reconciler', () => {
  it('enqueues a committed submission whose enqueue never happened', async () => {
    const id = await insertRow('queued', null);
    await eventually(async () => ((await statusOf(id)).email_status === 'sent' ? true : undefined), 15_000);
    expect(mailsFor(id)).toHaveLength(1);
  });

  it('takes over a row left `sending` by a dead worker once its claim is older than the lease', async () => {
    const id = await insertRow('sending', 60);
    await eventually(async () => ((await statusOf(id)).email_status === 'sent' ? true : undefined), 15_000);
    expect(h.sink.messages.some((mail) => mail.parsed.messageId === `<submission-${id}@example.test>`)).toBe(true);
  });

  it('finds a row without a job behind a paused backlog larger than its batch, and enqueues nothing twice', async () => {
    // The backlog: more rows than one reconciler batch, older than the lone row, each with a waiting
    // job that cannot run while the delivery queue is paused.
    const backlog = RECONCILE_BATCH + 100;
    const queue = h.api.deps.queue;
    await queue.pause();
    try {
      const rows = await buildSubmissions(
        h,
        Array.from({ length: backlog }, (_, i) => ({ key: keyId, message: `backlog ${i + 1}`, createdAt: ago({ seconds: 60 - (i + 1) / 1000 }) })),
      );
      const backlogIds = rows.map((row) => row.id);
      const added = await queue.addBulk(backlogIds.map((id) => ({ name: 'submission', data: { submissionId: id }, opts: { jobId: id } })));
      const addedAt = new Map(added.map((job) => [job.id, job.timestamp]));
      const lone = await insertRow('queued', null);
      await eventually(async () => ((await queue.getJobState(lone)) === 'unknown' ? undefined : true), 15_000, 'the reconciler to enqueue the lone row');
      // The jobs that were waiting are the same jobs, not replaced by new ones.
      const jobs = await Promise.all(backlogIds.map((id) => queue.getJob(id)));
      expect(jobs.filter((job, index) => job?.timestamp !== addedAt.get(backlogIds[index]))).toEqual([]);
      expect(await queue.count()).toBe(backlog + 1);
      await queue.resume();
      const all = [...backlogIds, lone];
      await eventually(async () => ((await sentCount(h, all)) === all.length ? true : undefined), 60_000, 'the backlog to be sent');
      const wanted = new Set(all.map((id) => `<submission-${id}@example.test>`));
      expect(h.sink.messages.filter((mail) => wanted.has(mail.parsed.messageId ?? '')).length).toBe(all.length);
    } finally {
      await queue.resume();
    }
  });

  it('enqueues again only the rows whose job is gone: a job waiting or delayed is left as it is', async () => {
    const { orm, queue, webhookQueue } = h.api.deps;
    // Saved an hour ahead, so that the workers' own reconciler leaves them to this run.
    const rows = await buildSubmissions(
      h,
      [1, 2, 3].map((n) => ({ key: keyId, message: `fate ${n}`, createdAt: fromNow({ hours: 1 }) })),
    );
    const [waiting, delayed, gone] = rows.map((row) => row.id);
    await queue.pause();
    try {
      const jobs = [
        await queue.add('submission', { submissionId: waiting! }, { jobId: waiting! }),
        await queue.add('submission', { submissionId: delayed! }, { jobId: delayed!, delay: 600_000 }),
      ];
      const enqueued = await reconcile(orm.em.fork(), { email: queue, webhook: webhookQueue }, createLogger('test', 'silent'), {
        staleAfterMs: -7_200_000,
        claimLeaseMs: 60_000,
        autoresponse: autoresponsePolicyOf(h.config),
      });
      expect(enqueued).toBe(1);
      expect(await queue.getJobState(gone!)).toBe('waiting');
      expect((await queue.getJob(waiting!))?.timestamp).toBe(jobs[0]!.timestamp);
      expect(await queue.getJobState(delayed!)).toBe('delayed');
      expect((await queue.getJob(delayed!))?.timestamp).toBe(jobs[1]!.timestamp);
    } finally {
      await removeSubmissions(h, [waiting!, delayed!, gone!]);
      await Promise.all([waiting, delayed, gone].map((id) => queue.remove(id!)));
      await queue.resume();
    }
  });

  it('replaces a job that finished while its row waits again (a re-send whose enqueue was lost)', async () => {
    const { orm, webhookQueue } = h.api.deps;
    // A queue of this test's own, where its job can fail without a worker of the harness taking it.
    const redis = createRedis(h.env.REDIS_URL!, 'worker');
    const queue = new Queue<DeliveryJob>('reconcile-finished', { connection: redis, prefix: h.env.QUEUE_PREFIX });
    const worker = new Worker<DeliveryJob>('reconcile-finished', null, { connection: redis, prefix: h.env.QUEUE_PREFIX, autorun: false });
    const { id } = await buildSubmission(h, { key: keyId, message: 'resent', createdAt: fromNow({ hours: 1 }) });
    try {
      await queue.add('submission', { submissionId: id }, { jobId: id, removeOnFail: false });
      const job = await worker.getNextJob('test-token');
      expect(job?.id).toBe(id);
      await job.moveToFailed(new Error('refused for good'), 'test-token', false);
      expect(await queue.getJobState(id)).toBe('failed');

      await reconcile(orm.em.fork(), { email: queue, webhook: webhookQueue }, createLogger('test', 'silent'), {
        staleAfterMs: -7_200_000,
        claimLeaseMs: 60_000,
        autoresponse: autoresponsePolicyOf(h.config),
      });
      expect(await queue.getJobState(id)).toBe('waiting');
      expect((await queue.getJob(id))?.failedReason).toBeFalsy();
    } finally {
      await removeSubmissions(h, [id]);
      await worker.close();
      await queue.obliterate({ force: true });
      await queue.close();
      await closeRedis(redis);
    }
  });

  it('leaves a fresh claim alone', async () => {
    const id = await insertRow('sending', 0);
    // A reconciler run has decided about the row when it returns.
    await runReconciler(h);
    // No job for it (a job already done would have left the row `sent`), and the claim stands.
    expect(await h.api.deps.queue.getJobState(id)).toBe('unknown');
    expect((await statusOf(id)).email_status).toBe('sending');
    // Gone before its claim is older than the lease: queued again then, it would be in flight in the tests below.
    await removeSubmissions(h, [id]);
  });
});

const exitOf = (child: ChildProcess) =>
  child.exitCode !== null || child.signalCode !== null
    ? Promise.resolve(child.exitCode)
    : new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));

describe('worker shutdown', () => {
  it('on SIGTERM with nothing in flight exits 0 within 5 s, as a container stop needs', async () => {
    // The periodic jobs of this file run every 300 ms, and any worker of the queue may take one: paused
    // before the worker starts, none can be in its hands at the signal, so it has nothing to finish.
    const redis = createRedis(h.config.REDIS_URL, 'worker');
    const housekeeping = createHousekeepingQueue(redis, h.config.QUEUE_PREFIX);
    await housekeeping.pause();
    try {
      const child = await spawnWorker(h.env);
      const t0 = Date.now();
      child.child.kill('SIGTERM');
      expect(await exitOf(child.child)).toBe(0);
      expect(Date.now() - t0).toBeLessThan(5_000);
      expect(child.output()).not.toContain('in flight');
    } finally {
      await housekeeping.resume();
      await housekeeping.close();
      await closeRedis(redis);
    }
  });

  it('on SIGTERM finishes the active job, saying so in one line, then exits 0', async () => {
    for (const worker of h.workers.splice(0)) await worker.shutdown.run();
    h.sink.delay(1_500);
    const child = await spawnWorker(h.env);
    const response = await submitJson(h, { access_key: key, email: 'a@example.org', message: 'in flight' });
    const id = response.json.submission_id;
    await eventually(async () => ((await statusOf(id)).email_status === 'sending' ? true : undefined), 10_000);
    const exited = new Promise<number | null>((resolve) => child.child.once('exit', (code) => resolve(code)));
    child.child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect((await statusOf(id)).email_status).toBe('sent');
    // The job it finished was the email itself, handed to the server before the exit.
    expect(mailsFor(id)).toHaveLength(1);
    expect(child.output().match(/finishing \d+ job\(s\) in flight before stopping/g), child.output()).toHaveLength(1);
    h.sink.delay(0);
  });

  it('on a second SIGINT exits at once; the row it cut short is delivered by the next worker', async () => {
    for (const worker of h.workers.splice(0)) await worker.shutdown.run();
    h.sink.delay(60_000);
    // A short job lock: the job of the killed worker is taken up again within seconds.
    const env = { ...h.env, JOB_LOCK_MS: '2000' };
    const child = await spawnWorker(env);
    let next: WorkerChild | undefined;
    try {
      const response = await submitJson(h, { access_key: key, email: 'a@example.org', message: 'cut short' });
      const id = response.json.submission_id;
      await eventually(async () => ((await statusOf(id)).email_status === 'sending' ? true : undefined), 10_000);
      child.child.kill('SIGINT');
      // The first press: the worker says that it finishes its job first, and does not exit.
      await eventually(async () => (/finishing \d+ job\(s\) in flight/.test(child.output()) ? true : undefined), 10_000, 'the line of the first press');
      // A second press counts only SECOND_PRESS_AFTER_MS (0.5 s) after the first: a person's pause between two.
      await sleep(1_000);
      expect(child.child.exitCode).toBeNull(); // still waiting for its job
      const t0 = Date.now();
      child.child.kill('SIGINT');
      expect(await exitOf(child.child)).toBe(1);
      // At once: the job it waited for holds it 60 s (the sink's delay); 5 s leaves a busy machine room.
      expect(Date.now() - t0).toBeLessThan(5_000);
      expect((await statusOf(id)).email_status).toBe('sending');
      h.sink.delay(0);
      next = await spawnWorker(env);
      await eventually(async () => ((await statusOf(id)).email_status === 'sent' ? true : undefined), 30_000, 'the row cut short to be sent');
      // Delivered by the next worker (the one cut short may have handed it over too: at least once).
      expect(mailsFor(id).length).toBeGreaterThanOrEqual(1);
    } finally {
      h.sink.delay(0);
      await child.kill();
      await next?.stop();
    }
  });
});
