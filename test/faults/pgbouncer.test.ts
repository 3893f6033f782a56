// The whole service behind a real PgBouncer (Debian 12's 1.18) in transaction mode, as
// docs/deploying.md#pgbouncer sets it up: DATABASE_POOLER=transaction, the pooler's address in
// DATABASE_URL, PostgreSQL's own in DATABASE_DIRECT_URL for the API's LISTEN and the migrations.
// The migrations, submissions and their emails, a retry, a key change reaching every API process,
// the owner console, the admin CLI and a bounce all work through it; under a load from two API
// processes with four workers, PostgreSQL holds no more connections than the pools allow; and the
// delivery rate through it is measured beside the direct one.
import { spawn } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BounceProcess } from '../../src/bounces/process.ts';
import { freePort } from '../../src/local/services.ts';
import { MIGRATIONS_PATH } from '../../src/shared/infra/db/orm.ts';
import { dsn } from '../../tools/sample-reports.ts';
import { submitJson } from '../support/client.ts';
import { eventually, startHarness, testDatabase, type Harness, type TestKey } from '../support/harness.ts';
import { emailsPerSubmission } from '../support/load.ts';
import { signIn } from '../support/owner.ts';
import { request } from '../support/http.ts';
import { startPgBouncer, POOL_SIZE, type PgBouncer } from '../support/pgbouncer.ts';
import { sendRaw } from '../support/smtp-client.ts';
import { spawnApi, spawnWorker, type WorkerChild } from '../support/workers.ts';
import { sleep } from '../support/sleep.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const BOUNCE_DOMAIN = 'bounces.test';
const WORKERS = 4;
/** Submissions of the load, and of each backlog whose delivery rate is measured. */
const LOAD = 400;
const BACKLOG = 300;

let database: Awaited<ReturnType<typeof testDatabase>>;
let bouncer: PgBouncer | undefined;
/** PostgreSQL itself, for the test's own reads: never through the pooler, not counted among the pools. */
let direct: pg.Pool;
let h: Harness | undefined;
let bounces: BounceProcess;
const apis: Array<{ url: string; process: WorkerChild }> = [];
const workers: WorkerChild[] = [];

const sql = async <T extends pg.QueryResultRow>(text: string, values?: unknown[]) => (await direct.query<T>(text, values)).rows;

/** The environment of every process: the pooler, and PostgreSQL itself where a session is needed. */
const pooled = () => ({ DATABASE_URL: bouncer!.apiUrl, DATABASE_POOLER: 'transaction', DATABASE_DIRECT_URL: database.url });
const workerEnv = (how: 'pooled' | 'direct') =>
  how === 'pooled' ? { ...h!.env, DATABASE_URL: bouncer!.workerUrl } : { ...h!.env, DATABASE_URL: database.url, DATABASE_POOLER: 'none' };

type Run = { code: number | null; stdout: string; stderr: string };
/** One of the service's command-line tools, run as an operator runs it. */
function runTool(script: string, args: string[], env: Record<string, string>): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, ...args], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => void (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => void (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** PostgreSQL's connections to this database now, but the test's own: through the pools, and direct (LISTEN). */
async function connections(): Promise<{ total: number; listening: number }> {
  const [row] = await sql<{ total: number; listening: number }>(
    `select count(*)::int as total, count(*) filter (where query ilike 'listen %')::int as listening
       from pg_stat_activity
      where datname = current_database() and backend_type = 'client backend' and application_name <> 'cfs-test-reader'`,
  );
  return row!;
}

/** The most connections seen while `during` runs, sampled every 50 ms. */
async function peakConnections<T>(during: () => Promise<T>): Promise<{ result: T; peak: { total: number; listening: number } }> {
  const peak = { total: 0, listening: 0 };
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      const now = await connections();
      peak.total = Math.max(peak.total, now.total);
      peak.listening = Math.max(peak.listening, now.listening);
      // The sampling interval.
      await sleep(50);
    }
  })();
  try {
    return { result: await during(), peak };
  } finally {
    sampling = false;
    await sampler;
  }
}

const sentCountOf = async (ids: string[]) =>
  (await sql<{ n: number }>(`select count(*)::int as n from submissions where id = any($1::uuid[]) and email_status = 'sent'`, [ids]))[0]!.n;

/** Emails sent a second, from `since` (the queue resumed) to the last `sent` of these submissions. */
async function deliveryRate(ids: string[], since: number): Promise<number> {
  const [row] = await sql<{ last_ms: number }>(
    `select (extract(epoch from max(sent_at)) * 1000)::float8 as last_ms from submissions where id = any($1::uuid[])`,
    [ids],
  );
  return ids.length / ((row!.last_ms - since) / 1000);
}

/** One after another: four starting at once on a busy machine outlast a start's wait. */
async function startWorkers(how: 'pooled' | 'direct'): Promise<void> {
  for (let n = 0; n < WORKERS; n += 1) workers.push(await spawnWorker(workerEnv(how)));
}
async function stopWorkers(): Promise<void> {
  for (const worker of workers.splice(0)) await worker.stop();
}

beforeAll(async () => {
  database = await testDatabase({ migrated: false });
  direct = new pg.Pool({ connectionString: database.url, max: 2, application_name: 'cfs-test-reader' });
  direct.on('error', () => undefined);
  bouncer = await startPgBouncer(database.url);
});
afterAll(async () => {
  try {
    await stopWorkers();
    for (const api of apis) await api.process.stop();
    await h?.stop();
  } finally {
    await direct?.end();
    await bouncer?.stop();
    await database?.drop();
  }
}, 120_000);

it('migrates through the pooler: the lock and the migrations on the direct address, one run at a time', async () => {
  const runs = await Promise.all([1, 2].map(() => runTool('src/cli/migrate.ts', [], pooled())));
  for (const run of runs) expect(run, run.stderr).toMatchObject({ code: 0, stderr: '' });
  expect(runs.filter((run) => run.stdout.startsWith('Applied: '))).toHaveLength(1);
  expect(runs.filter((run) => run.stdout === 'No pending migrations.\n')).toHaveLength(1);
  const expected = (await readdir(MIGRATIONS_PATH)).filter((file) => /^Migration\d+_.*\.ts$/.test(file)).length;
  expect((await sql('select name from mikro_orm_migrations')).length).toBe(expected);

  // Without the direct address the lock would be a pooled session's: refused before anything runs.
  const { DATABASE_DIRECT_URL: _unset, ...withoutDirect } = pooled();
  const refused = await runTool('src/cli/migrate.ts', [], withoutDirect);
  expect(refused.code).toBe(78);
  expect(refused.stderr).toContain('with DATABASE_POOLER=transaction, set DATABASE_DIRECT_URL');
});

describe('the service through PgBouncer in transaction mode', () => {
  let key: TestKey;

  beforeAll(async () => {
    // Nothing pending after the test above; everything when that one is not run.
    const migrated = await runTool('src/cli/migrate.ts', [], pooled());
    expect(migrated, migrated.stderr).toMatchObject({ code: 0 });
    h = await startHarness({
      worker: false,
      env: {
        ...pooled(),
        BOUNCE_DOMAIN,
        // Only a notification can make an API process forget a cached key.
        KEY_CACHE_TTL_MS: '600000',
        EMAIL_RETRY_BACKOFF_MS: '200',
      },
    });
    for (let n = 0; n < 2; n += 1) {
      const port = await freePort();
      apis.push({ url: `http://127.0.0.1:${port}`, process: await spawnApi({ ...h.env, PORT: String(port) }) });
    }
    bounces = await h.startBounces();
    await startWorkers('pooled');
    key = await h.createKey();
  }, 180_000);

  it('bounds statements at the pooler, as the service would on a direct connection', async () => {
    const shown = async (url: string) => {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        return (await client.query<{ statement_timeout: string }>('show statement_timeout')).rows[0]!.statement_timeout;
      } finally {
        await client.end();
      }
    };
    expect(await shown(bouncer!.apiUrl)).toBe(`${h!.config.PG_STATEMENT_TIMEOUT_MS / 1000}s`);
    expect(await shown(bouncer!.workerUrl)).toBe(`${h!.config.PG_WORKER_STATEMENT_TIMEOUT_MS / 60_000}min`);
  });

  it('accepts and delivers a submission to each API process, once each', async () => {
    const ids: string[] = [];
    for (const api of apis) {
      const answer = await submitJson({ ...h!, url: api.url }, { access_key: key.key, email: 'visitor@example.org', message: `to ${api.url}` });
      expect(answer.status).toBe(200);
      ids.push(answer.json.submission_id);
    }
    await eventually(async () => ((await sentCountOf(ids)) === ids.length ? true : undefined), 30_000, 'both sent');
    const emails = emailsPerSubmission(h!);
    expect(ids.map((id) => emails.get(id))).toEqual([1, 1]);
  });

  it('retries an email the relay refused for a while, then sends it once', async () => {
    h!.sink.refuse('rcpt-to', { code: 451, message: '4.7.1 Try again later' });
    const answer = await submitJson(h!, { access_key: key.key, email: 'visitor@example.org', message: 'refused at first' });
    expect(answer.status).toBe(200);
    const id = answer.json.submission_id as string;
    await eventually(
      async () => {
        const [row] = await sql<{ email_status: string; email_attempts: number }>('select email_status, email_attempts from submissions where id = $1', [id]);
        return row!.email_status === 'retrying' && row!.email_attempts >= 2 ? true : undefined;
      },
      30_000,
      'two refused attempts',
    );
    h!.sink.refuse('rcpt-to', undefined);
    await eventually(async () => ((await sentCountOf([id])) === 1 ? true : undefined), 30_000, 'sent after the retries');
    expect(emailsPerSubmission(h!).get(id)).toBe(1);
  });

  it("tells every API process's key cache of a change made through the admin CLI", async () => {
    const changed = await h!.createKey();
    const everyApi = [h!.url, ...apis.map((api) => api.url)];
    const submitTo = (url: string) => submitJson({ ...h!, url }, { access_key: changed.key, email: 'visitor@example.org', message: 'cached' });
    // Each process has the key in its cache now.
    for (const url of everyApi) expect((await submitTo(url)).status).toBe(200);
    const disabled = await runTool('src/cli/admin.ts', ['keys', 'disable', changed.key], h!.env);
    expect(disabled, disabled.stderr).toMatchObject({ code: 0 });
    for (const url of everyApi) await eventually(async () => ((await submitTo(url)).status === 403 ? true : undefined), 10_000, `${url} refusing the key`);
  });

  it('serves the owner console: sign-in, the keys, the messages, on either API process', async () => {
    const owner = await signIn(h!, key.email);
    const keys = await owner.get('/owner/keys');
    expect(keys.status).toBe(200);
    expect(keys.text).toContain(key.id);
    // The session is PostgreSQL's: another process knows it.
    const listed = await request(`${apis[0]!.url}/owner/api/keys/${key.id}/submissions`, { headers: { cookie: `owner_session=${owner.cookie}` } });
    expect(listed.status).toBe(200);
    expect(listed.json.submissions.length).toBeGreaterThanOrEqual(3);
  });

  it('records a bounce the receiver takes', async () => {
    const answer = await submitJson(h!, { access_key: key.key, email: 'visitor@example.org', message: 'to bounce' });
    const id = answer.json.submission_id as string;
    const mail = await eventually(async () => h!.sink.messages.find((message) => message.parsed.messageId?.includes(id)), 30_000, 'the email');
    await eventually(async () => ((await sentCountOf([id])) === 1 ? true : undefined), 30_000, '`sent`');
    const returnPath = mail.envelope.from;
    const reply = await sendRaw(bounces.port, { from: '', to: [returnPath] }, dsn({ to: returnPath, recipient: key.email }));
    expect(reply.data?.code).toBe(250);
    await eventually(
      async () =>
        (await sql<{ email_status: string }>('select email_status from submissions where id = $1', [id]))[0]!.email_status === 'bounced' ? true : undefined,
      10_000,
      '`bounced`',
    );
  });

  it('takes a load from two API processes with four workers: every 200 delivered once, PostgreSQL within the pools', async () => {
    const answers: Array<{ status: number; retryAfter: string | null; id?: string }> = [];
    const errors: string[] = [];
    const accepted = () => answers.filter((answer) => answer.status === 200).length;
    const started = Date.now();
    const { peak } = await peakConnections(async () => {
      // 8 clients, 4 on each API process, one request after another, until LOAD are accepted.
      await Promise.all(
        Array.from({ length: 8 }, async (_, client) => {
          const target = { ...h!, url: apis[client % 2]!.url };
          while (accepted() < LOAD && Date.now() - started < 180_000) {
            try {
              const answer = await submitJson(target, { access_key: key.key, email: 'visitor@example.org', message: `load, client ${client}` });
              answers.push({ status: answer.status, retryAfter: answer.headers.get('retry-after'), id: answer.json?.submission_id });
            } catch (error) {
              errors.push((error as Error).message);
            }
          }
        }),
      );
      const ids = answers.filter((answer) => answer.status === 200).map((answer) => answer.id!);
      await eventually(async () => ((await sentCountOf(ids)) === ids.length ? true : undefined), 120_000, 'every accepted submission sent');
    });
    expect(errors).toEqual([]);
    expect(answers.filter((answer) => !(answer.status === 200 || (answer.status === 503 && answer.retryAfter)))).toEqual([]);
    const ids = answers.filter((answer) => answer.status === 200).map((answer) => answer.id!);
    expect(ids.length).toBeGreaterThanOrEqual(LOAD);
    const emails = emailsPerSubmission(h!);
    expect(ids.filter((id) => emails.get(id) !== 1)).toEqual([]);
    process.stdout.write(
      `pgbouncer load: ${ids.length} accepted in ${((Date.now() - started) / 1000).toFixed(1)} s, ` +
        `PostgreSQL's connections at most ${peak.total} (${peak.listening} of them LISTEN), pools ${POOL_SIZE.api} + ${POOL_SIZE.worker}\n`,
    );
    // Each API instance (the test's own and the two processes) listens on a direct connection of its own.
    expect(peak.listening).toBeLessThanOrEqual(apis.length + 1);
    expect(peak.total).toBeLessThanOrEqual(POOL_SIZE.api + POOL_SIZE.worker + apis.length + 1);
  }, 360_000);

  it('delivers a backlog through the pooler as through a direct connection: both rates measured', async () => {
    const rates: Record<'pooled' | 'direct', number[]> = { pooled: [], direct: [] };
    const queue = h!.api.deps.queue;
    for (const how of ['pooled', 'direct', 'pooled', 'direct'] as const) {
      await stopWorkers();
      // The backlog waits in the paused queue while the workers start; the clock starts at the resume.
      await queue.pause();
      const ids: string[] = [];
      while (ids.length < BACKLOG) {
        const batch = await Promise.all(
          Array.from({ length: 8 }, (_, n) =>
            submitJson({ ...h!, url: apis[n % 2]!.url }, { access_key: key.key, email: 'visitor@example.org', message: `backlog ${how}` }),
          ),
        );
        for (const answer of batch) if (answer.status === 200) ids.push(answer.json.submission_id);
      }
      await startWorkers(how);
      const resumedAt = Date.now();
      await queue.resume();
      await eventually(async () => ((await sentCountOf(ids)) === ids.length ? true : undefined), 120_000, `the ${how} backlog sent`);
      const emails = emailsPerSubmission(h!);
      expect(ids.filter((id) => emails.get(id) !== 1)).toEqual([]);
      rates[how].push(await deliveryRate(ids, resumedAt));
    }
    const shown = (list: number[]) => list.map((rate) => rate.toFixed(0)).join(', ');
    process.stdout.write(`pgbouncer delivery: ${WORKERS} workers, ${BACKLOG} emails each: pooled ${shown(rates.pooled)}/s, direct ${shown(rates.direct)}/s\n`);
    for (const rate of [...rates.pooled, ...rates.direct]) expect(rate).toBeGreaterThan(0);
  }, 480_000);
});
