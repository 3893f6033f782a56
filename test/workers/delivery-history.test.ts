// The delivery history of a submission's email: every attempt kept with its time, the server's
// answer (or the error) and the worker, through retries and re-sends; and when a `retrying` one was
// last tried and will be tried next, as the admin API and the owner's JSON API show it.
import { hostname } from 'node:os';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startHarness, type Harness } from '../support/harness.ts';
import { adminClient, submitJson } from '../support/client.ts';
import { signIn } from '../support/owner.ts';

const TOKEN = 'delivery-history-admin-token';
let h: Harness;
let key: { key: string; email: string };
beforeAll(async () => {
  h = await startHarness({ env: { ADMIN_TOKEN: TOKEN, EMAIL_RETRY_BACKOFF_MS: '100', SMTP_BREAKER_THRESHOLD: '1000' } });
  key = await h.createKey();
});
afterAll(() => h?.stop());

const admin = adminClient(() => h, TOKEN);
const submit = async (message: string) => (await submitJson(h, { access_key: key.key, email: 'visitor@example.org', message })).json.submission_id as string;
const recordOf = async (id: string) => (await admin('GET', `/admin/submissions/${id}`)).json;
const untilStatus = (id: string, status: string) =>
  eventually(
    async () => {
      const record = await recordOf(id);
      return record.email_status === status ? record : undefined;
    },
    20_000,
    `submission ${id} to be ${status}`,
  );
/** This test's worker runs in this process. */
const WORKER = `${hostname()}:${process.pid}`;

describe('the delivery history', () => {
  it('keeps the three attempts of an email refused twice, then accepted, with their answers', async () => {
    let refusals = 0;
    h.sink.behave(() => (refusals++ < 2 ? { code: 451, message: `Try again later (refusal ${refusals})` } : undefined));
    try {
      const id = await submit('refused twice');
      const sent = await untilStatus(id, 'sent');
      expect(sent.email_attempts).toBe(3);
      expect(sent.delivery_attempts_total).toBe(3);
      // Newest first.
      expect(sent.delivery_attempts).toEqual([
        { attempt: 3, at: expect.any(String), outcome: 'sent', response: expect.stringMatching(/^250 /), worker: WORKER },
        { attempt: 2, at: expect.any(String), outcome: 'retrying', response: expect.stringContaining('451 Try again later (refusal 2)'), worker: WORKER },
        { attempt: 1, at: expect.any(String), outcome: 'retrying', response: expect.stringContaining('451 Try again later (refusal 1)'), worker: WORKER },
      ]);
      const times = sent.delivery_attempts.map((attempt: { at: string }) => Date.parse(attempt.at));
      expect([...times].sort((a, b) => b - a)).toEqual(times);
      expect(sent.last_attempt_at).toBe(sent.delivery_attempts[0].at);
      expect(sent.next_attempt_at).toBeNull();
    } finally {
      h.sink.behave(undefined);
    }
  });

  it('keeps the attempts of a failed email when it is re-sent, and adds the new ones', async () => {
    h.sink.behave(() => ({ code: 550, message: 'mailbox unavailable: kept in the history' }));
    const id = await submit('failed, then re-sent');
    try {
      const failed = await untilStatus(id, 'failed');
      expect(failed.delivery_attempts).toEqual([
        {
          attempt: 1,
          at: expect.any(String),
          outcome: 'failed',
          response: expect.stringContaining('550 mailbox unavailable: kept in the history'),
          worker: WORKER,
        },
      ]);
    } finally {
      h.sink.behave(undefined);
    }
    const resent = await admin('POST', `/admin/submissions/${id}/resend`);
    expect(resent.status).toBe(200);
    // Queued again: the history is still there.
    expect(resent.json.delivery_attempts_total).toBeGreaterThanOrEqual(1);
    const sent = await untilStatus(id, 'sent');
    expect(sent.email_attempts).toBe(1);
    expect(sent.last_error).toBeNull();
    expect(sent.delivery_attempts_total).toBe(2);
    expect(sent.delivery_attempts.map((attempt: { outcome: string; attempt: number }) => [attempt.outcome, attempt.attempt])).toEqual([
      ['sent', 1],
      ['failed', 1],
    ]);
    expect(sent.delivery_attempts[1].response).toContain('550 mailbox unavailable: kept in the history');

    // The owner's JSON API shows the same history, without the operator's worker.
    const owner = await signIn(h, key.email);
    const mine = await owner.api('GET', `/submissions/${id}`);
    expect(mine.json.delivery_attempts).toEqual(sent.delivery_attempts.map(({ worker: _, ...attempt }: { worker: string }) => attempt));
  });

  it('is deleted with its submission', async () => {
    const id = await submit('deleted with its history');
    await untilStatus(id, 'sent');
    expect(await h.sql('select attempt from delivery_attempts where submission_id = $1', [id])).toEqual([{ attempt: 1 }]);
    const owner = await signIn(h, key.email);
    expect((await owner.api('DELETE', `/submissions/${id}`)).status).toBe(204);
    expect(await h.sql('select attempt from delivery_attempts where submission_id = $1', [id])).toEqual([]);
  });
});

describe('a retrying email', () => {
  it('shows when it was last tried and when its retry timer ends', async () => {
    const slow = await startHarness({ env: { ADMIN_TOKEN: TOKEN, EMAIL_RETRY_BACKOFF_MS: '3600000', SMTP_BREAKER_THRESHOLD: '1000' } });
    try {
      slow.sink.behave(() => ({ code: 451, message: 'Greylisted, come back later' }));
      const owner = await slow.createKey();
      const id = (await submitJson(slow, { access_key: owner.key, email: 'visitor@example.org', message: 'waits an hour' })).json.submission_id as string;
      const slowAdmin = adminClient(() => slow, TOKEN);
      const retrying = await eventually(
        async () => {
          const record = (await slowAdmin('GET', `/admin/submissions/${id}`)).json;
          return record.email_status === 'retrying' ? record : undefined;
        },
        20_000,
        'retrying',
      );
      expect(retrying.last_attempt_at).toBe(retrying.delivery_attempts[0].at);
      expect(retrying.delivery_attempts[0]).toMatchObject({ attempt: 1, outcome: 'retrying', response: expect.stringContaining('451 Greylisted') });
      // The first retry waits EMAIL_RETRY_BACKOFF_MS shortened by the jitter (to 50 % at most).
      const wait = Date.parse(retrying.next_attempt_at) - Date.parse(retrying.last_attempt_at);
      expect(wait).toBeGreaterThanOrEqual(1_800_000 - 1_000);
      expect(wait).toBeLessThanOrEqual(3_600_000 + 1_000);
      // The same moment as the timer of its job in the queue.
      const score = await delayedScore(slow, id);
      expect(Math.abs(Math.floor(score / 0x1000) - Date.parse(retrying.next_attempt_at))).toBeLessThan(1_000);

      // The sign-in email must get through; the submission's timer runs on.
      slow.sink.behave(undefined);
      const client = await signIn(slow, owner.email);
      const mine = await client.api('GET', `/submissions/${id}`);
      expect(mine.json.next_attempt_at).toBe(retrying.next_attempt_at);
      expect(mine.json.last_attempt_at).toBe(retrying.last_attempt_at);
      const page = await client.get(`/owner/submissions/${id}`);
      expect(page.text).toContain(`data-field="next-attempt"><time datetime="${retrying.next_attempt_at}">`);
      expect(page.text).toContain(`data-field="last-attempt"><time datetime="${retrying.last_attempt_at}">`);
    } finally {
      await slow.stop();
    }
  });
});

/** The score of a job in the delivery queue's delayed set: its due time, in ms, times 0x1000. */
async function delayedScore(harness: Harness, id: string): Promise<number> {
  const redis = new Redis(harness.config.REDIS_URL, { maxRetriesPerRequest: 1 });
  try {
    return Number(await redis.zscore(`${harness.config.QUEUE_PREFIX}:deliveries:delayed`, id));
  } finally {
    redis.disconnect();
  }
}
