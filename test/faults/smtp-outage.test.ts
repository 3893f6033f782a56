// An SMTP server that refuses every message (451), then one that refuses connections, for longer
// than the attempt budget of the old EMAIL_MAX_ATTEMPTS (8 attempts from 100 ms doubling: under 13 s)
// while submissions keep arriving. Nothing may end `failed`: the retry horizon is far away, and the
// circuit breaker holds the backlog instead of spending every message's attempts on the outage.
// The outage lasts OUTAGE_MS (20 s) rather than minutes: with these timers it already
// outlasts the old budget, and the attempt counts show the breaker at work.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startHarness, type Harness } from '../support/harness.ts';
import { submitJson } from '../support/client.ts';
import { startSmtpSink } from '../support/smtp-sink.ts';
import { sleep } from '../support/sleep.ts';

const OUTAGE_MS = 20_000;
const ADMIN_TOKEN = 'smtp-outage-admin-token-0123';
const SUBMISSIONS_PER_SECOND = 3;
let h: Harness;
let key: string;
beforeAll(async () => {
  h = await startHarness({
    env: {
      EMAIL_RETRY_BACKOFF_MS: '100',
      EMAIL_RETRY_MAX_BACKOFF_MS: '1000',
      EMAIL_RETRY_HORIZON_MS: String(10 * 60_000),
      SMTP_BREAKER_THRESHOLD: '5',
      SMTP_PROBE_INTERVAL_MS: '1000',
      RECONCILE_INTERVAL_MS: '1000',
      RECONCILE_AFTER_MS: '5000',
      ADMIN_TOKEN: ADMIN_TOKEN,
    },
  });
  key = (await h.createKey()).key;
});
afterAll(() => h?.stop());

/** Submits SUBMISSIONS_PER_SECOND for the length of the outage; returns the ids answered 200. */
async function submitDuring(label: string): Promise<string[]> {
  const ids: string[] = [];
  const end = Date.now() + OUTAGE_MS;
  for (let second = 0; Date.now() < end && second < OUTAGE_MS / 1000; second++) {
    const batch = await Promise.all(
      Array.from({ length: SUBMISSIONS_PER_SECOND }, (_, i) =>
        submitJson(h, { access_key: key, email: 'visitor@example.org', message: `${label} ${second}.${i}` }),
      ),
    );
    for (const response of batch) {
      expect(response.status).toBe(200);
      ids.push(response.json.submission_id);
    }
    // The load spread over the window: one batch a second.
    await sleep(Math.max(0, Math.min(1_000, end - Date.now())));
  }
  return ids;
}

async function readiness() {
  const response = await fetch(`${h.url}/readyz`);
  return (await response.json()) as { status: string; delivery: { smtp: { breaker: string; reason?: string } } };
}

async function breakerGauge(): Promise<string | undefined> {
  const text = await (await fetch(`${h.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).text();
  return /^cfs_smtp_breaker_open (\d)/m.exec(text)?.[1];
}

/** Every id `sent`, none `failed`; returns the attempts each took. */
async function settle(ids: string[]): Promise<number[]> {
  await eventually(
    async () => {
      const [row] = await h.sql<{ sent: number; failed: number }>(
        `select count(*) filter (where email_status = 'sent')::int as sent, count(*) filter (where email_status = 'failed')::int as failed
         from submissions where id = any($1)`,
        [ids],
      );
      expect(row!.failed).toBe(0);
      return row!.sent === ids.length ? true : undefined;
    },
    90_000,
    `all ${ids.length} submissions to be sent`,
  );
  const rows = await h.sql<{ email_attempts: number }>('select email_attempts from submissions where id = any($1)', [ids]);
  return rows.map((row) => row.email_attempts);
}

/**
 * Without the breaker each message would be tried every second or so (the backoff is capped at
 * 1 s here): about 20 attempts for the first ones. With it, most messages are tried once, and the
 * few that serve as probes a handful of times.
 */
function expectFewAttempts(attempts: number[]) {
  expect(Math.max(...attempts)).toBeLessThanOrEqual(8);
  expect(attempts.reduce((sum, n) => sum + n, 0)).toBeLessThanOrEqual(2 * attempts.length);
}

function report(label: string, attempts: number[]) {
  const total = attempts.reduce((sum, n) => sum + n, 0);
  const histogram = attempts.reduce<Record<number, number>>((counts, n) => ({ ...counts, [n]: (counts[n] ?? 0) + 1 }), {});
  console.info(
    `${label}: ${attempts.length} submissions, ${total} attempts, at most ${Math.max(...attempts)} for one; attempts: submissions ${JSON.stringify(histogram)}`,
  );
}

describe('an SMTP outage longer than the old attempt budget', () => {
  it('answering 451 to every message: every submission ends sent, few attempts each, the breaker visible meanwhile', async () => {
    h.sink.behave(() => ({ code: 451, message: 'Try again later' }));
    let sawOpen = false;
    let gauge: string | undefined;
    const watching = (async () => {
      for (let i = 0; i < OUTAGE_MS / 500 && !sawOpen; i++) {
        const ready = await readiness();
        if (ready.delivery.smtp.breaker === 'open') {
          sawOpen = true;
          expect(ready.status).toBe('ready');
          expect(ready.delivery.smtp.reason).toContain('451');
          gauge = await breakerGauge();
        }
        // Readiness sampled twice a second through the outage.
        await sleep(500);
      }
    })();
    let ids: string[];
    try {
      ids = await submitDuring('refused');
      await watching;
    } finally {
      h.sink.behave(undefined);
    }
    expect(sawOpen).toBe(true);
    expect(gauge).toBe('1');
    const attempts = await settle(ids);
    report('451 outage', attempts);
    expectFewAttempts(attempts);
    const arrived = new Set(h.sink.messages.map((mail) => mail.parsed.messageId));
    expect(ids.filter((id) => !arrived.has(`<submission-${id}@example.test>`))).toEqual([]);
    await eventually(async () => ((await readiness()).delivery.smtp.breaker === 'closed' ? true : undefined), 10_000, 'the breaker to close');
    expect(await breakerGauge()).toBe('0');
  });

  it('refusing connections: every submission ends sent once the server is back, few attempts each', async () => {
    const port = h.sink.port;
    await h.sink.close();
    let ids: string[];
    try {
      ids = await submitDuring('unreachable');
      expect((await readiness()).delivery.smtp.breaker).toBe('open');
    } finally {
      h.sink = await startSmtpSink(port);
    }
    const attempts = await settle(ids);
    report('connection outage', attempts);
    expectFewAttempts(attempts);
    await h.sink.waitFor(ids.length, 30_000);
    const arrived = new Set(h.sink.messages.map((mail) => mail.parsed.messageId));
    expect(ids.filter((id) => !arrived.has(`<submission-${id}@example.test>`))).toEqual([]);
  });
});
