// An owner's costly reads cannot take the service from everyone else: a statement PostgreSQL itself
// cancels at PG_STATEMENT_TIMEOUT_MS, searches over an indexed bounded prefix with a bound per
// session, and CSV downloads bounded per session and per process (SECURITY.md).
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildSubmissions } from '../support/factories.ts';
import { eventually, startHarness, type Harness } from '../support/harness.ts';
import { submitJson } from '../support/client.ts';
import { request } from '../support/http.ts';
import { signIn, type OwnerClient } from '../support/owner.ts';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({
    env: { OWNER_SEARCHES_PER_SESSION: '2', OWNER_EXPORTS_PER_SESSION: '1', EXPORTS_PER_PROCESS: '2' },
  });
});
afterAll(() => h?.stop());

/** The statements of this file's database still running, other than the one asking. */
const running = (like: string) =>
  h.sql<{ query: string }>(
    `select query from pg_stat_activity where datname = current_database() and state = 'active' and pid <> pg_backend_pid() and query ilike $1`,
    [like],
  );

/** The middle sample (nearest rank). */
const median = (samples: number[]) => [...samples].sort((a, b) => a - b)[Math.floor((samples.length - 1) / 2)]!;

async function timed(call: () => Promise<{ status: number }>): Promise<{ ms: number; status: number }> {
  const start = performance.now();
  const { status } = await call();
  return { ms: performance.now() - start, status };
}

describe('statement timeout', () => {
  it("makes PostgreSQL cancel an API statement at PG_STATEMENT_TIMEOUT_MS, before the API's own wait ends", async () => {
    const em = h.api.deps.orm.em.fork();
    const error = await em.execute('select pg_sleep(30)').then(
      () => undefined,
      (caught: unknown) => caught,
    );
    // 57014: canceled by the server; the client's own wait would have said "Query read timeout".
    const codes = [error, (error as { cause?: unknown } | undefined)?.cause].map((e) => (e as { code?: string } | undefined)?.code);
    expect(codes).toContain('57014');
    expect(await running('%pg_sleep(30)%')).toEqual([]);
  });
});

describe('an owner searching and downloading large messages', () => {
  let attacker: { id: string; email: string };
  let attackerClient: OwnerClient;
  let other: { id: string; key: string; email: string };
  let otherClient: OwnerClient;
  const BIG = 100_000;
  beforeAll(async () => {
    attacker = await h.createKey();
    other = await h.createKey();
    attackerClient = await signIn(h, attacker.email);
    otherClient = await signIn(h, other.email);
    // 16 messages of about 900 KB (a 100,000-character message and 8 fields of 100,000), as the
    // public API takes them, in a few statements; the words begin with "a" throughout.
    const text = (seed: number) => `a${seed} alpha ${'abcdefghij '.repeat(BIG / 11)}`.slice(0, BIG);
    for (let batch = 0; batch < 4; batch++) {
      await buildSubmissions(
        h,
        Array.from({ length: 4 }, (_, i) => ({
          key: attacker,
          message: text(batch * 4 + i),
          customFields: Array.from({ length: 8 }, (_, f): [string, string] => [`field${f}`, text(f)]),
          status: 'sent' as const,
          attempts: 1,
        })),
      );
    }
    await buildSubmissions(
      h,
      Array.from({ length: 30 }, (_, i) => ({ key: other, message: `Hello ${i}`, status: 'sent' as const, attempts: 1 })),
    );
  }, 120_000);

  it("holds the searches at the session's bound while another owner's page, a public submission and /readyz are served as usual, during 20 concurrent searches", async () => {
    const probes = {
      'other owner page': () => otherClient.api('GET', `/keys/${other.id}/submissions`),
      'public submission': () => submitJson(h, { access_key: other.key, email: 'v@example.org', message: 'During the searches' }),
      '/readyz': () => request(`${h.url}/readyz`),
    };
    const sample = async (rounds: number) => {
      const ms: Record<string, number[]> = {};
      for (let i = 0; i < rounds; i++) {
        for (const [name, call] of Object.entries(probes)) {
          const result = await timed(call);
          expect(result.status, name).toBe(200);
          (ms[name] ??= []).push(result.ms);
        }
      }
      return ms;
    };
    // Warm-up: the first requests compile their code paths, a round of searches' too (answers and refusals).
    await sample(3);
    await Promise.all(Array.from({ length: 20 }, () => attackerClient.api('GET', `/keys/${attacker.id}/submissions?q=a`)));
    const before = await sample(60);

    // The load: rounds of 20 concurrent searches by one session, for as long as the probes run, from
    // a process of its own (an attacker's client is not the server's), which prints each status.
    const load = spawn(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `const [url, cookie] = process.argv.slice(1);
         for (;;) {
           const answers = await Promise.all(Array.from({ length: 20 }, () => fetch(url, { headers: { cookie, accept: 'application/json' } }).then(async (r) => (await r.arrayBuffer(), r.status))));
           process.stdout.write(answers.join('\\n') + '\\n');
           // The next round after a breath: 20 tabs reloading, not a flood, which a proxy's per-IP limits bound.
           await new Promise((resolve) => setTimeout(resolve, 200));
         }`,
        `${h.url}/owner/api/keys/${attacker.id}/submissions?q=a`,
        `owner_session=${attackerClient.cookie}`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let printed = '';
    load.stdout.on('data', (chunk: Buffer) => (printed += chunk.toString()));
    const statuses = () => printed.split('\n').filter(Boolean).map(Number);
    await eventually(async () => (statuses().length >= 20 ? true : undefined), 30_000, 'the first round of searches');
    // The bound's own signal, read from PostgreSQL beside the probes: how many searches run at once.
    let watching = true;
    const atOnce: number[] = [];
    const watch = (async () => {
      while (watching) atOnce.push((await running('%search_document%')).length);
    })();
    const during = await sample(60).finally(() => {
      watching = false;
      load.kill();
    });
    await watch;
    await once(load, 'exit');

    // Each search is answered: found, or refused at once past the session's bound; never a 503.
    expect(new Set(statuses())).toEqual(new Set([200, 429]));
    // Never more than the session's two at once in PostgreSQL: the other 18 of each round take
    // nothing from the requests of others. (On a fast machine a search may end between two looks,
    // so the look may see none; the 429s above are the sign that the bound was reached.)
    expect(Math.max(...atOnce)).toBeLessThanOrEqual(2);
    for (const name of Object.keys(probes)) {
      // Served as usual: the typical request (the median, which two busy loops beside the suite
      // move far less than the tail) within 3× the same request's before the load, plus 200 ms.
      // Without the bound a request waits for a connection behind the searches, seconds each.
      const bound = 3 * median(before[name]!) + 200;
      expect(median(during[name]!), `${name}: median before ${Math.round(median(before[name]!))} ms`).toBeLessThanOrEqual(bound);
    }
    // Nothing of the searches goes on in PostgreSQL once they are answered.
    expect(await running('%search_document%')).toEqual([]);
  }, 180_000);

  it('lists each message cut to 1,000 characters and each field to 500, says so, and gives the whole message on its own page', async () => {
    // One row as stored before the cut fields were kept: cut on read, the same way.
    await h.sql('update submissions set fields_preview = null, fields_truncated = null where id = (select id from submissions where key_id = $1 limit 1)', [
      attacker.id,
    ]);
    const list = await attackerClient.api('GET', `/keys/${attacker.id}/submissions?limit=100`);
    expect(list.status).toBe(200);
    const items = (
      list.json as { submissions: Array<{ submission_id: string; message: string; truncated: boolean; custom_fields: Array<{ name: string; value: string }> }> }
    ).submissions;
    expect(items).toHaveLength(16);
    for (const item of items) {
      expect(item.truncated).toBe(true);
      expect(item.message).toHaveLength(1_000);
      expect(item.message).toMatch(/^a\d+ alpha abcdefghij/);
      expect(item.custom_fields.map((field) => [field.name, field.value.length])).toEqual(Array.from({ length: 8 }, (_, f) => [`field${f}`, 500]));
    }
    // A page of 16 such messages (14 MB stored) answers in about 100 KB.
    expect(list.text.length).toBeLessThan(150_000);

    const whole = await attackerClient.api('GET', `/submissions/${items[0]!.submission_id}`);
    expect(whole.json).toMatchObject({ truncated: false });
    expect((whole.json as { message: string }).message.length).toBeGreaterThan(90_000);
    expect((whole.json as { custom_fields: Array<{ value: string }> }).custom_fields[0]!.value.length).toBeGreaterThan(90_000);

    // A short message is whole in the list, and not marked.
    const short = (await otherClient.api('GET', `/keys/${other.id}/submissions?limit=1`)).json as {
      submissions: Array<{ message: string; truncated: boolean }>;
    };
    expect(short.submissions[0]).toMatchObject({ truncated: false });
    expect(short.submissions[0]!.message.length).toBeLessThan(1_000);
  });

  describe('CSV downloads', () => {
    /** A download whose answer is not read: the server's stream waits, and its slot stays taken. */
    const holdDownload = (client: OwnerClient, keyId: string) =>
      new Promise<{ status: number; close: () => void }>((resolve, reject) => {
        const req = http.get(`${h.url}/owner/api/keys/${keyId}/submissions.csv`, { headers: { cookie: `owner_session=${client.cookie}` } }, (res) => {
          res.pause();
          resolve({ status: res.statusCode ?? 0, close: () => req.destroy() });
        });
        req.on('error', (error) => (error.message === 'socket hang up' ? undefined : reject(error)));
      });

    it("answers 429 with Retry-After past the session's one download and past the process's two, and lets the next through once one ends", async () => {
      // 24 more large messages: a download of 35 MB cannot end in the sockets' buffers while held.
      for (let batch = 0; batch < 6; batch++) {
        await buildSubmissions(
          h,
          Array.from({ length: 4 }, () => ({
            key: attacker,
            message: 'b'.repeat(BIG),
            customFields: Array.from({ length: 8 }, (_, f): [string, string] => [`field${f}`, 'c'.repeat(BIG)]),
            status: 'sent' as const,
            attempts: 1,
          })),
        );
      }
      const first = await holdDownload(attackerClient, attacker.id);
      expect(first.status).toBe(200);
      const second = await attackerClient.api('GET', `/keys/${attacker.id}/submissions.csv`);
      expect(second.status).toBe(429);
      expect(Number(second.headers['retry-after'])).toBeGreaterThan(0);
      expect(second.json).toMatchObject({ success: false, errors: { __all__: [expect.any(String)] } });

      // Another session of the same owner takes the process's other slot; a different owner's is then refused.
      const otherDownload = await holdDownload(await signIn(h, attacker.email), attacker.id);
      expect(otherDownload.status).toBe(200);
      const third = await h.createKey();
      const thirdClient = await signIn(h, third.email);
      const refused = await thirdClient.api('GET', `/keys/${third.id}/submissions.csv`);
      expect(refused.status).toBe(429);
      expect(refused.headers['retry-after']).toBeDefined();

      first.close();
      otherDownload.close();
      const after = await eventually(async () => {
        const response = await thirdClient.api('GET', `/keys/${third.id}/submissions.csv`);
        return response.status === 200 ? response : undefined;
      });
      expect(after.text.split('\r\n')[0]).toMatch(/^submission_id,created_at,/);
    }, 60_000);
  });
});
