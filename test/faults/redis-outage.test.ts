// Redis stops while submissions keep arriving: the API still answers 200 for what it saved (or a
// clear 503), never a 200 for a lost submission; once Redis is back, the workers resume and the
// reconciler enqueues what was saved meanwhile, so everything is delivered.
import { solveChallenge, type Challenge } from 'altcha-lib';
import { deriveKey } from 'altcha-lib/algorithms/pbkdf2';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis } from '../../src/local/services.ts';
import { eventually, startHarness, type Harness } from '../support/harness.ts';
import { emailStatusOf } from '../support/rows.ts';
import { submitJson, submitter } from '../support/client.ts';

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

  /** An ALTCHA key, and answers to its challenges solved as the widget solves them. */
  const altchaForm = async () => {
    const altchaKey = await h.createKey({ captcha: 'altcha' });
    const solved = async () => {
      const challenge = (await (await fetch(`${h.url}/api/contact-api/altcha-challenge?access_key=${encodeURIComponent(altchaKey.key)}`)).json()) as Challenge;
      const answer = Buffer.from(JSON.stringify({ challenge, solution: await solveChallenge({ challenge, deriveKey }) })).toString('base64');
      return { signature: challenge.signature, fields: { access_key: altchaKey.key, email: 'a@example.org', message: 'with ALTCHA', altcha: answer } };
    };
    const rows = async () => Number((await h.sql<{ n: string }>('select count(*) as n from submissions where key_id = $1', [altchaKey.id]))[0]!.n);
    return { solved, fields: async () => (await solved()).fields, rows };
  };

  /** Submits while Redis hangs (resumed right after the answer, or after 20 s in any case). */
  const submitWhileRedisHangs = async (fields: Record<string, string>) => {
    const resume = () => process.kill(redis.child.pid!, 'SIGCONT');
    process.kill(redis.child.pid!, 'SIGSTOP');
    // Resumed in any case after 20 s, so that a request that waits for Redis ends too.
    const resumeLater = setTimeout(resume, 20_000);
    const started = performance.now();
    const refused = await submitJson(h, fields);
    const tookMs = performance.now() - started;
    clearTimeout(resumeLater);
    resume();
    return { refused, tookMs };
  };

  it('refuses an ALTCHA answer with a 503 within seconds while Redis hangs, keeping nothing, and accepts the same answer once Redis is back', async () => {
    const { fields, rows } = await altchaForm();
    const whileHung = await fields();
    const { refused, tookMs } = await submitWhileRedisHangs(whileHung);
    expect(refused.status).toBe(503);
    expect(refused.json).toMatchObject({ success: false, message: 'Captcha verification is unavailable. Please try again.' });
    // The rate limit gives up after 0.5 s and the replay check after 1 s, each at most twice: 3 s,
    // with room for a busy machine.
    expect(tookMs).toBeLessThan(15_000);
    expect(await rows()).toBe(0);

    // The replay check sent while Redis hung sets its mark once Redis runs again; the refused
    // submission takes it back, so the visitor's retry with the same answer is accepted, once.
    const retried = await eventually(
      async () => {
        const response = await submitJson(h, whileHung);
        if (response.status === 200) return response;
        expect(response.json).toMatchObject({ errors: { altcha: ['The captcha answer was already used. Please solve it again.'] } });
        return undefined;
      },
      10_000,
      'the retry with the same answer to be accepted',
    );
    expect(retried.status).toBe(200);
    expect(await rows()).toBe(1);
    const replayed = await submitJson(h, whileHung);
    expect(replayed.status).toBe(400);
    expect(replayed.json).toMatchObject({ errors: { altcha: ['The captcha answer was already used. Please solve it again.'] } });
    expect(await rows()).toBe(1);
  });

  it('leaves the mark of an answer accepted by another API process when its own check timed out while Redis hung', async () => {
    const { solved, fields, rows } = await altchaForm();
    const { signature, fields: usedElsewhere } = await solved();
    const markKey = `${h.env.QUEUE_PREFIX}:altcha:${signature}`;
    const admin = new Redis(redis.url);
    try {
      // Another API process accepted this answer first: the mark holds its submission's token.
      await admin.set(markKey, 'another-submission', 'PX', 600_000);
      const { refused } = await submitWhileRedisHangs(usedElsewhere);
      expect(refused.status).toBe(503);
      // Once a later submission's check has run on the API's connection, the timed-out check and
      // its release (sent before it, on the same connection) have run too.
      expect((await submitJson(h, await fields())).status).toBe(200);
      expect(await admin.get(markKey)).toBe('another-submission');
      const replayed = await submitJson(h, usedElsewhere);
      expect(replayed.status).toBe(400);
      expect(replayed.json).toMatchObject({ errors: { altcha: ['The captcha answer was already used. Please solve it again.'] } });
      expect(await rows()).toBe(1);
    } finally {
      admin.disconnect();
    }
  });
});
