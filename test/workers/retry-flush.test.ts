// Flushing the retry timers: after an outage, the emails that wait on a retry timer (an hour here)
// are tried now when an operator asks (POST /admin/deliveries/flush) or when the SMTP circuit
// breaker closes; paced, so that at most `per_second` of them come due in each second.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startHarness, type Harness } from '../support/harness.ts';
import { adminClient, submitJson } from '../support/client.ts';

const TOKEN = 'retry-flush-admin-token-0123';
/** Long enough that no retry comes by itself while a test runs. */
const HOUR = '3600000';
let h: Harness;
let key: string;
beforeAll(async () => {
  h = await startHarness({ env: { ADMIN_TOKEN: TOKEN, EMAIL_RETRY_BACKOFF_MS: HOUR, SMTP_BREAKER_THRESHOLD: '1000' } });
  key = (await h.createKey()).key;
});
afterAll(() => h?.stop());

const admin = adminClient(() => h, TOKEN);

async function submit(harness: Harness, accessKey: string, message: string): Promise<string> {
  const response = await submitJson(harness, { access_key: accessKey, email: 'visitor@example.org', message });
  expect(response.status).toBe(200);
  return response.json.submission_id as string;
}

function untilStatus(harness: Harness, id: string, status: string) {
  const ask = adminClient(() => harness, TOKEN);
  return eventually(
    async () => {
      const record = (await ask('GET', `/admin/submissions/${id}`)).json;
      return record.email_status === status ? record : undefined;
    },
    20_000,
    `submission ${id} to be ${status}`,
  );
}

/** The delivery queue's jobs waiting to run, and those on a timer with their due times (ms). */
async function queueState(harness: Harness): Promise<{ waiting: string[]; timers: Map<string, number> }> {
  const redis = new Redis(harness.config.REDIS_URL, { maxRetriesPerRequest: 1 });
  try {
    const prefix = `${harness.config.QUEUE_PREFIX}:deliveries`;
    const waiting = await redis.lrange(`${prefix}:wait`, 0, -1);
    const scored = await redis.zrange(`${prefix}:delayed`, 0, -1, 'WITHSCORES');
    const timers = new Map<string, number>();
    for (let i = 0; i < scored.length; i += 2) timers.set(scored[i]!, Math.floor(Number(scored[i + 1]) / 0x1000));
    return { waiting, timers };
  } finally {
    redis.disconnect();
  }
}

describe('POST /admin/deliveries/flush', () => {
  it('tries an email waiting an hour on its retry timer now', async () => {
    h.sink.behave(() => ({ code: 451, message: 'Try again later' }));
    const id = await submit(h, key, 'waits on its timer');
    const retrying = await untilStatus(h, id, 'retrying');
    expect(Date.parse(retrying.next_attempt_at) - Date.now()).toBeGreaterThan(60_000);
    h.sink.behave(undefined);

    const flushed = await admin('POST', '/admin/deliveries/flush');
    expect(flushed.status).toBe(200);
    expect(flushed.json).toEqual({ promoted: 1, scheduled: 0, unchanged: 0, per_second: 10, last_at: expect.any(String) });
    const sent = await untilStatus(h, id, 'sent');
    expect(sent.delivery_attempts.map((attempt: { outcome: string }) => attempt.outcome)).toEqual(['sent', 'retrying']);
  });

  it('paces the flush: at most per_second emails come due in each second', async () => {
    const PER_SECOND = 2;
    h.sink.behave(() => ({ code: 451, message: 'Try again later' }));
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(await submit(h, key, `paced ${i}`));
    for (const id of ids) await untilStatus(h, id, 'retrying');
    h.sink.behave(undefined);
    // Nothing is taken while the test reads the queue.
    await h.workers[0]!.worker.pause();
    try {
      const flushed = await admin('POST', '/admin/deliveries/flush', { per_second: PER_SECOND });
      expect(flushed.status).toBe(200);
      expect(flushed.json).toMatchObject({ promoted: PER_SECOND, scheduled: 3, unchanged: 0, per_second: PER_SECOND });

      // Two to run now; the other three on timers, grouped by the second of the flush they fall in.
      const { waiting, timers } = await queueState(h);
      expect(waiting.filter((id) => ids.includes(id))).toHaveLength(PER_SECOND);
      const records = await Promise.all(ids.map(async (id) => (await admin('GET', `/admin/submissions/${id}`)).json));
      const start = Math.min(...records.map((record) => Date.parse(record.next_attempt_at)));
      const perSecond = new Map<number, number>();
      for (const id of ids) {
        const due = timers.get(id) ?? start;
        const second = Math.floor((due - start) / 1_000);
        perSecond.set(second, (perSecond.get(second) ?? 0) + 1);
      }
      expect([...perSecond.entries()].sort(([a], [b]) => a - b)).toEqual([
        [0, 2],
        [1, 2],
        [2, 1],
      ]);
      // Each row says when its turn comes: the same seconds.
      const shown = records.map((record) => Math.floor((Date.parse(record.next_attempt_at) - start) / 1_000)).sort();
      expect(shown).toEqual([0, 0, 1, 1, 2]);
    } finally {
      await h.workers[0]!.worker.resume();
    }
    for (const id of ids) await untilStatus(h, id, 'sent');
  });

  it('refuses a bad pace in the error shape', async () => {
    for (const body of [{ per_second: 0 }, { per_second: 1.5 }, { per_second: 'fast' }, { other: 1 }]) {
      const refused = await admin('POST', '/admin/deliveries/flush', body);
      expect(refused.status, JSON.stringify(body)).toBe(400);
      expect(refused.json.success).toBe(false);
    }
    const unauthenticated = await admin('POST', '/admin/deliveries/flush', undefined, null);
    expect(unauthenticated.status).toBe(401);
  });
});

describe('the circuit breaker closing', () => {
  it('flushes the retry timers of the emails that failed during the outage', async () => {
    const outage = await startHarness({
      env: { ADMIN_TOKEN: TOKEN, EMAIL_RETRY_BACKOFF_MS: HOUR, SMTP_BREAKER_THRESHOLD: '1', SMTP_PROBE_INTERVAL_MS: '300' },
    });
    try {
      const owner = await outage.createKey();
      outage.sink.behave(() => ({ code: 451, message: 'Relay overloaded' }));
      const early = await submit(outage, owner.key, 'failed during the outage');
      await untilStatus(outage, early, 'retrying');
      const ready = (await (await fetch(`${outage.url}/readyz`)).json()) as { delivery: { smtp: { breaker: string } } };
      expect(ready.delivery.smtp.breaker).toBe('open');

      // The relay answers again: the next email probes it, its success closes the breaker.
      outage.sink.behave(undefined);
      const probe = await submit(outage, owner.key, 'the probe');
      await untilStatus(outage, probe, 'sent');
      const sent = await untilStatus(outage, early, 'sent');
      expect(sent.delivery_attempts.map((attempt: { outcome: string }) => attempt.outcome)).toEqual(['sent', 'retrying']);
    } finally {
      await outage.stop();
    }
  });
});
