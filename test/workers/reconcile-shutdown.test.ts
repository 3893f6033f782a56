// The reconciler picks up rows that have no job; a worker's SIGTERM finishes the job in hand.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, postJson, startHarness, type Harness } from '../support/harness.ts';
import { spawnWorker } from '../support/workers.ts';

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

const statusOf = async (id: string) => ((await h.sql('select email_status, email_attempts from submissions where id = $1', [id])) as any[])[0];
const insertRow = async (status: string, claimedSecondsAgo: number | null) =>
  ((await h.sql(
    `insert into submissions (id, key_id, email, message, subject, email_status, claimed_at, created_at)
     values (gen_random_uuid(), $1, 'a@example.org', 'lost', 'Lost', $2,
             case when $3::int is null then null else now() - make_interval(secs => $3::int) end, now() - interval '10 seconds')
     returning id`,
    [keyId, status, claimedSecondsAgo],
  )) as [{ id: string }])[0].id;

describe('reconciler', () => {
  it('enqueues a committed submission whose enqueue never happened', async () => {
    const id = await insertRow('queued', null);
    await eventually(async () => ((await statusOf(id)).email_status === 'sent' ? true : undefined), 15_000);
  });

  it('takes over a row left `sending` by a dead worker once its claim is older than the lease', async () => {
    const id = await insertRow('sending', 60);
    await eventually(async () => ((await statusOf(id)).email_status === 'sent' ? true : undefined), 15_000);
    expect(h.sink.messages.some((mail) => mail.parsed.messageId === `<submission-${id}@example.test>`)).toBe(true);
  });

  it('leaves a fresh claim alone', async () => {
    const id = await insertRow('sending', 0);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect((await statusOf(id)).email_status).toBe('sending');
  });
});

describe('worker shutdown', () => {
  it('on SIGTERM finishes the active job, then exits 0', async () => {
    for (const worker of h.workers.splice(0)) await worker.shutdown.run();
    h.sink.delay(1_500);
    const child = await spawnWorker(h.env);
    const response = await postJson(`${h.url}/api/contact-api/`, { access_key: key, email: 'a@example.org', message: 'in flight' });
    const id = response.json.submission_id;
    await eventually(async () => ((await statusOf(id)).email_status === 'sending' ? true : undefined), 10_000);
    const exited = new Promise<number | null>((resolve) => child.child.once('exit', (code) => resolve(code)));
    child.child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect((await statusOf(id)).email_status).toBe('sent');
    h.sink.delay(0);
  });
});
