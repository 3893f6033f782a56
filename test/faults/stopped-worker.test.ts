// A worker process stopped (SIGSTOP) past its claim lease while a second worker delivers its row,
// then resumed (SIGCONT), as a starved or paused worker comes back: it must neither send the email
// again nor write its outcome over the other worker's `sent`. Stopped once before it sends (waiting
// for the spam filter's verdict) and once mid-send, when the SMTP server refuses its message.
import { hostname } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RspamdService } from '../../src/local/rspamd.ts';
import { adminClient, submitJson } from '../support/client.ts';
import { eventually, startHarness, type Harness, type TestKey } from '../support/harness.ts';
import { emailStatusOf } from '../support/rows.ts';
import { spamFilterEnv, startSpamFilter } from '../support/spam-filter.ts';
import { spawnWorker, type WorkerChild } from '../support/workers.ts';

const TOKEN = 'stopped-worker-admin-token-0123456789';
const LOST_CLAIM = "another worker claimed the row after this worker's claim passed CLAIM_LEASE_MS";

let filter: RspamdService;
let h: Harness;
let key: TestKey;
const children: WorkerChild[] = [];
beforeAll(async () => {
  filter = await startSpamFilter();
  h = await startHarness({
    worker: false,
    env: {
      ...spamFilterEnv(filter),
      ADMIN_TOKEN: TOKEN,
      // Short lock and lease: the stopped worker's job and claim pass to the other within seconds.
      JOB_LOCK_MS: '2000',
      CLAIM_LEASE_MS: '3000',
      RECONCILE_INTERVAL_MS: '1000',
      RECONCILE_AFTER_MS: '1000',
      // Longer than the worker stays stopped: its check is answered, not timed out.
      SPAM_CHECK_TIMEOUT_MS: '60000',
    },
  });
  key = await h.createKey();
}, 90_000);
afterAll(async () => {
  for (const child of children) {
    if (child.child.signalCode === null && child.child.exitCode === null) child.child.kill('SIGCONT');
    await child.kill();
  }
  if (filter?.child.pid) process.kill(-filter.child.pid, 'SIGCONT');
  await h?.stop();
  await filter?.stop();
});

const admin = adminClient(() => h, TOKEN);
const worker = async () => {
  const started = await spawnWorker(h.env);
  children.push(started);
  return started;
};
const nameOf = (child: WorkerChild) => `${hostname()}:${child.child.pid}`;
const mailsFor = (id: string) => h.sink.messages.filter((mail) => mail.parsed.messageId === `<submission-${id}@example.test>`);
const untilSent = (id: string) =>
  eventually(async () => ((await emailStatusOf(h, id)) === 'sent' && mailsFor(id).length > 0 ? true : undefined), 30_000, `${id} sent by the other worker`);

/** Resumes the stopped worker and waits until it is done with the row: its one line, or (without the fence) anything it did to the row. */
async function resume(stopped: WorkerChild, id: string): Promise<void> {
  stopped.child.kill('SIGCONT');
  await eventually(
    async () => (stopped.output().includes(LOST_CLAIM) || mailsFor(id).length > 1 || (await emailStatusOf(h, id)) !== 'sent' ? true : undefined),
    30_000,
    'the resumed worker to be done with the row',
  );
}

/** What the owner and the operator see: one email, and a history of one attempt, the other worker's `sent`. */
async function expectDeliveredOnceBy(id: string, deliverer: WorkerChild, stopped: WorkerChild): Promise<void> {
  expect(mailsFor(id)).toHaveLength(1);
  const record = (await admin('GET', `/admin/submissions/${id}`)).json;
  expect(record.email_status).toBe('sent');
  expect(record.delivery_attempts.map((attempt: { outcome: string; worker: string }) => [attempt.outcome, attempt.worker])).toEqual([
    ['sent', nameOf(deliverer)],
  ]);
  const lines = stopped
    .output()
    .split('\n')
    .filter((line) => line.includes(LOST_CLAIM));
  expect(lines, stopped.output()).toHaveLength(1);
  expect(lines[0]).toContain(id);
}

const submit = async (message: string) => {
  const response = await submitJson(h, { access_key: key.key, email: 'visitor@example.org', message });
  expect(response.status).toBe(200);
  return response.json.submission_id as string;
};

describe('a worker stopped past its claim lease, beside a second worker', () => {
  it('does not send when it resumes before sending: one email, one attempt in the history', async () => {
    const stopped = await worker();
    // The filter stopped too (its whole process group): the worker waits for its verdict, before sending.
    process.kill(-filter.child.pid!, 'SIGSTOP');
    let id: string;
    try {
      id = await submit('Hello, could you send me a quote for the kitchen project? Thanks, Ana');
      await eventually(async () => ((await emailStatusOf(h, id)) === 'sending' ? true : undefined), 15_000, 'the first worker to claim the row');
      stopped.child.kill('SIGSTOP');
    } finally {
      process.kill(-filter.child.pid!, 'SIGCONT');
    }
    const other = await worker();
    await untilSent(id);
    await resume(stopped, id);
    await expectDeliveredOnceBy(id, other, stopped);
    for (const child of children.splice(0)) await child.stop();
  });

  it('records nothing over the other worker’s `sent` when its own send then fails: one email, no `retrying` after `sent`', async () => {
    const stopped = await worker();
    // Its message is the first the SMTP server gets: the worker stops before it reads the answer,
    // a refusal, as from a server that gave up on a client stuck mid-transaction.
    let stopNext = true;
    h.sink.behave(() => {
      if (!stopNext) return undefined;
      stopNext = false;
      stopped.child.kill('SIGSTOP');
      return { code: 451, message: 'Timeout waiting for the client' };
    });
    try {
      const id = await submit('Hello, is the workshop on Friday still open for two more people? Ben');
      await eventually(async () => (stopNext ? undefined : true), 15_000, 'the first worker to send');
      const other = await worker();
      await untilSent(id);
      await resume(stopped, id);
      await expectDeliveredOnceBy(id, other, stopped);
    } finally {
      h.sink.behave(undefined);
    }
  });
});
