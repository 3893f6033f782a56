// Redis stops while submissions keep arriving: the API still answers 200 for what it saved (or a
// clear 503), never a 200 for a lost submission; once Redis is back, the workers resume and the
// reconciler enqueues what was saved meanwhile, so everything is delivered.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis } from '../../src/local/services.ts';
import { eventually, startHarness, type Harness } from '../support/harness.ts';
import { emailStatusOf } from '../support/rows.ts';
import { submitter } from '../support/client.ts';

let redis: Awaited<ReturnType<typeof startRedis>>;
let h: Harness;
let key: string;
beforeAll(async () => {
  // A private Redis without persistence: a restart loses every job, the worst case.
  redis = await startRedis();
  h = await startHarness({ env: { REDIS_URL: redis.url, RECONCILE_INTERVAL_MS: '500', RECONCILE_AFTER_MS: '500' } });
  key = (await h.createKey()).key;
});
afterAll(async () => {
  await h?.stop();
  await redis?.stop();
});

const submit = submitter(
  () => h,
  () => ({ access_key: key, email: 'a@example.org' }),
);
const statusOf = (id: string) => emailStatusOf(h, id);

describe('Redis outage', () => {
  it('keeps accepting submissions and delivers all of them once Redis is back', async () => {
    const before = await submit({ message: 'before the outage' });
    expect(before.status).toBe(200);
    await eventually(async () => ((await statusOf(before.json.submission_id)) === 'sent' ? true : undefined));

    await redis.stop();
    const during: string[] = [];
    for (let i = 0; i < 15; i++) {
      const response = await submit({ message: `during the outage ${i}` });
      expect([200, 503]).toContain(response.status);
      if (response.status === 200) {
        expect(response.json.email_status).toBe('queued');
        expect(await statusOf(response.json.submission_id)).toBe('queued');
        during.push(response.json.submission_id);
      }
    }
    expect(during.length).toBeGreaterThan(0);
    const ready = await fetch(`${h.url}/readyz`);
    expect(ready.status).toBe(503);
    expect(((await ready.json()) as any).down).toEqual(['redis']);

    redis = await startRedis({ port: redis.port });
    const after = await submit({ message: 'after the outage' });
    expect(after.status).toBe(200);

    for (const id of [...during, after.json.submission_id]) {
      await eventually(async () => ((await statusOf(id)) === 'sent' ? true : undefined), 30_000, `submission ${id} to be sent`);
    }
    const delivered = new Set(h.sink.messages.map((mail) => mail.parsed.messageId));
    for (const id of during) expect(delivered.has(`<submission-${id}@example.test>`)).toBe(true);
  });
});
