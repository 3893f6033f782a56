// A flood at the ALTCHA challenge endpoint costs no more than one at the submission endpoint: each
// client address is rate limited as for submissions, and a value that matches no key is remembered
// for a moment, so unknown keys cost PostgreSQL next to nothing. The database's work is counted by
// PostgreSQL itself: the transactions of this file's database (pg_stat_database), read from
// another database so that reading them adds none.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { eventually, startHarness, type Harness } from '../support/harness.ts';
import { request, type RawResponse } from '../support/http.ts';
import { sleep } from '../support/sleep.ts';

/** RATE_LIMIT_MAX here, in a window of a minute: a flood never outlasts it, even on a busy machine. */
const LIMIT = 2;
const LIMIT_MESSAGE = 'Too many requests. Please wait 60 seconds before trying again.';
const INVALID_KEY = {
  success: false,
  message: 'Invalid or inactive verification key.',
  errors: { access_key: ['Invalid or inactive verification key.'], __all__: ['Invalid or inactive verification key.'] },
};
/** The transactions a flood may cost: its few lookups, and room for PostgreSQL's own autovacuum visiting the database. */
const A_FEW = 8;

let h: Harness;
let stats: pg.Client;
let database: string;
beforeAll(async () => {
  h = await startHarness({ env: { RATE_LIMIT_MAX: String(LIMIT), RATE_LIMIT_WINDOW_MS: '60000' }, worker: false });
  database = new URL(h.env.DATABASE_URL!).pathname.slice(1);
  stats = new pg.Client({ connectionString: inject('postgresUrl') });
  await stats.connect();
});
afterAll(async () => {
  await stats?.end();
  await h?.stop();
});

const challenge = (accessKey: string, localAddress: string) =>
  request(`${h.url}/api/contact-api/altcha-challenge?access_key=${encodeURIComponent(accessKey)}`, {
    localAddress,
    headers: { origin: 'https://site.example' },
  });

/** `count` requests, `concurrency` of them in flight at any time; the answers in the order sent. */
async function flood(count: number, concurrency: number, send: (index: number) => Promise<RawResponse>): Promise<RawResponse[]> {
  const answers: RawResponse[] = [];
  let next = 0;
  const lane = async () => {
    for (let index = next++; index < count; index = next++) answers[index] = await send(index);
  };
  await Promise.all(Array.from({ length: concurrency }, lane));
  return answers;
}

/** The `n`th address of a loopback range (from 1): a client of its own. */
const nthAddress = (range: number, n: number) => `127.${range}.${Math.ceil(n / 250)}.${((n - 1) % 250) + 1}`;

const countStatuses = (answers: RawResponse[]) => {
  const counts: Record<number, number> = {};
  for (const { status } of answers) counts[status] = (counts[status] ?? 0) + 1;
  return counts;
};

/**
 * The transactions this file's database has committed or rolled back, once PostgreSQL has counted
 * them all. A connection reports its counts when it goes idle, at most once a second; what it
 * holds back it reports once it has been idle for 10 s. So this waits until every client
 * connection to the database has been idle for longer than that.
 */
async function transactions(): Promise<number> {
  for (;;) {
    const { rows } = await stats.query<{ busy: number; n: number }>(
      `select (select count(*) from pg_stat_activity
                where datname = $1 and backend_type = 'client backend'
                  and (state is distinct from 'idle' or state_change > now() - interval '11 seconds'))::int as busy,
              (select xact_commit + xact_rollback from pg_stat_database where datname = $1)::int as n`,
      [database],
    );
    if (rows[0]!.busy === 0) return rows[0]!.n;
    // The poll's interval.
    await sleep(250);
  }
}

describe('ALTCHA challenges under a flood', () => {
  it('answers a flood of unknown keys from one address with 429 past the limit, at the cost of a few transactions', async () => {
    const before = await transactions();
    const answers = await flood(400, 16, () => challenge(randomUUID(), '127.0.0.21'));
    expect(countStatuses(answers)).toEqual({ 403: LIMIT, 429: 400 - LIMIT });
    const unknown = answers.find((answer) => answer.status === 403)!;
    expect(unknown.json).toEqual(INVALID_KEY);
    const limited = answers.find((answer) => answer.status === 429)!;
    expect(limited.json).toEqual({ success: false, message: LIMIT_MESSAGE, errors: { __all__: [LIMIT_MESSAGE] } });
    expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(Number(limited.headers['retry-after'])).toBeLessThanOrEqual(60);
    expect(limited.headers['access-control-allow-origin']).toBe('*');
    expect((await transactions()) - before).toBeLessThanOrEqual(A_FEW);
  }, 120_000);

  it('looks one unknown key sent from many addresses up only a few times, and serves it within seconds once a key has that value', async () => {
    const value = randomUUID();
    const before = await transactions();
    // 200 addresses, one request each: none is over its limit.
    const answers = await flood(200, 16, (index) => challenge(value, nthAddress(1, index + 1)));
    expect(countStatuses(answers)).toEqual({ 403: 200 });
    expect(answers[0]!.json).toEqual(INVALID_KEY);
    expect((await transactions()) - before).toBeLessThanOrEqual(A_FEW);

    await h.createKey({ value, captcha: 'altcha' });
    let address = 0;
    const served = await eventually(
      async () => {
        const answer = await challenge(value, nthAddress(2, ++address));
        return answer.status === 200 ? answer : undefined;
      },
      10_000,
      'a challenge for the key just added',
    );
    expect(served.headers['cache-control']).toBe('no-store');
    expect(served.json.parameters.algorithm).toBe('PBKDF2/SHA-256');
  }, 120_000);

  it('still counts the submissions of an address apart: its challenges do not spend them', async () => {
    const key = await h.createKey();
    const address = '127.0.0.22';
    for (let i = 0; i < LIMIT; i++) expect((await challenge(key.key, address)).status).toBe(200);
    expect((await challenge(key.key, address)).status).toBe(429);
    const submit = () =>
      request(`${h.url}/api/contact-api/`, {
        method: 'POST',
        localAddress: address,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ access_key: key.key, email: 'visitor@example.test', message: 'hello' }),
      });
    for (let i = 0; i < LIMIT; i++) expect((await submit()).status).toBe(200);
    expect((await submit()).status).toBe(429);
  });
});
