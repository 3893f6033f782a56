// A burst of submissions against a filter that is alive but busy: every email waits its turn for a
// check (SPAM_CHECKS_IN_FLIGHT per worker) instead of timing out and going out unchecked. Sending
// everything unchecked in a burst would let a spammer bypass the filter. Against a real rspamd,
// and against a stand-in that serves one check at a time, slowly, which no worker may overrun.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RspamdService } from '../../src/local/rspamd.ts';
import { eventually, startHarness, type Harness, type TestKey } from '../support/harness.ts';
import { formMessage, spamFilterEnv, startSpamFilter, submitTo } from '../support/spam-filter.ts';
import { sleep } from '../support/sleep.ts';

const SUBMISSIONS = 400;
const CLIENTS = 12;
// The default is 500 ms; twice that leaves room for a machine that also runs other tests, and a
// check that waited its turn behind 50 others (the worker's concurrency) would still miss it.
const CHECK_TIMEOUT_MS = 1_000;

let filter: RspamdService;
let h: Harness;

/** The submissions among `ids` once all are sent or held, counted by verdict. */
async function verdictsOf(harness: Harness, ids: string[]): Promise<Map<string | null, number>> {
  const rows = await eventually(
    async () => {
      const counted = await harness.sql<{ verdict: string | null; n: number }>(
        `select spam_verdict as verdict, count(*)::int as n from submissions
        where id = any($1) and email_status in ('sent', 'spam') group by 1`,
        [ids],
      );
      return counted.reduce((sum, row) => sum + row.n, 0) === ids.length ? counted : undefined;
    },
    120_000,
    'every submission sent or held',
  );
  return new Map(rows.map((row) => [row.verdict, row.n]));
}

/** Sends `count` submissions from `clients` clients at once, alternately to each key; their ids. */
async function burst(harness: Harness, keys: TestKey[], count: number, clients: number): Promise<string[]> {
  const ids: string[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (next < count) {
        const seed = next++;
        ids.push(await submitTo(harness, keys[seed % keys.length]!, formMessage(seed % 3 === 0 ? 'spam' : 'ham', seed)));
      }
    }),
  );
  return ids;
}

beforeAll(async () => {
  filter = await startSpamFilter();
  h = await startHarness({ env: { ...spamFilterEnv(filter), SPAM_CHECK_TIMEOUT_MS: String(CHECK_TIMEOUT_MS), WORKER_CONCURRENCY: '50' } });
}, 90_000);
afterAll(async () => {
  await h?.stop();
  await filter?.stop();
});

describe('a burst of submissions', () => {
  it(`checks at least 99 % of ${SUBMISSIONS} submissions sent by ${CLIENTS} clients at once`, async () => {
    const ids = await burst(h, [await h.createKey(), await h.createKey()], SUBMISSIONS, CLIENTS);
    const verdicts = await verdictsOf(h, ids);
    expect(verdicts.has(null)).toBe(false);
    expect(verdicts.get('unchecked') ?? 0).toBeLessThanOrEqual(SUBMISSIONS / 100);
  }, 180_000);

  it("sends a worker's checks at most SPAM_CHECKS_IN_FLIGHT at a time, each timed from when it is sent", async () => {
    // A filter that serves one check at a time, 50 ms each: 50 checks sent at once would leave the
    // last waiting 2.5 s, past the 2 s timeout; 4 at a time, none waits more than 200 ms (the margin
    // is for a busy machine's late timers).
    let inFlight = 0;
    let mostInFlight = 0;
    let line = Promise.resolve();
    const busy: Server = createServer((req, res) => {
      inFlight += 1;
      mostInFlight = Math.max(mostInFlight, inFlight);
      req.resume();
      req.on('end', () => {
        line = line.then(async () => {
          // A slow filter on purpose: 50 ms a check, one at a time, so that checks pile up behind it.
          await sleep(50);
          inFlight -= 1;
          res.setHeader('content-type', 'application/json');
          res.end(JSON.stringify({ score: 1, symbols: {} }));
        });
      });
    });
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(busy.address() as AddressInfo).port}`;
    const slow = await startHarness({
      env: { SPAM_FILTER_URL: url, SPAM_FILTER_CONTROLLER_URL: url, SPAM_CHECK_TIMEOUT_MS: '2000', WORKER_CONCURRENCY: '50', SPAM_CHECKS_IN_FLIGHT: '4' },
    });
    try {
      const ids = await burst(slow, [await slow.createKey()], 200, CLIENTS);
      const verdicts = await verdictsOf(slow, ids);
      expect(verdicts.get('ham')).toBe(200);
      expect(mostInFlight).toBeLessThanOrEqual(4);
    } finally {
      await slow.stop();
      await new Promise((resolve) => busy.close(resolve));
    }
  }, 180_000);
});
