// A wrong SECRET is found at start: the database keeps a value sealed under the SECRET it was first
// started with, and the API, a worker, the bounce receiver, npm start and the admin CLI stop with a
// message saying what happened and what to do. A key that cannot be read anyway is shown as
// unavailable on the admin list and the owner's pages, never a 500.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi } from '../../src/api/server.ts';
import { startBounceReceiver } from '../../src/bounces/process.ts';
import { freePort } from '../../src/local/services.ts';
import { createLogger } from '../../src/shared/infra/log.ts';
import { KEY_UNAVAILABLE } from '../../src/shared/keys/keys.ts';
import { checkSecret } from '../../src/shared/infra/secret-check.ts';
import { startWorker } from '../../src/workers/worker.ts';
import { adminClient } from '../support/client.ts';
import { buildKey, onClient } from '../support/factories.ts';
import { eventually, startHarness, testDatabase, TEST_SECRET, type Harness } from '../support/harness.ts';
import { signIn } from '../support/owner.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const TOKEN = 'secret-check-admin-token-0123';
const OTHER_SECRET = 'another-secret-than-the-data-was-written-with';
const STOPS = 'SECRET is not the one this database was written with';
const WHAT_TO_DO = 'What to do: start again with the SECRET the data was written with';
const log = createLogger('test', 'silent');

let h: Harness;
let dataDir: string;
beforeAll(async () => {
  h = await startHarness({ env: { ADMIN_TOKEN: TOKEN, BOUNCE_DOMAIN: 'bounces.example.test' } });
  dataDir = await mkdtemp(path.join(tmpdir(), 'cfs-secret-check-'));
});
afterAll(async () => {
  await h?.stop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

const admin = adminClient(() => h, TOKEN);

/** Runs a process's own command (`node src/…/main.ts`) with the harness's settings and `env`; its exit code and output. */
function runEntry(script: string, env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, [script], {
    cwd: ROOT,
    env: { ...process.env, ...h.env, LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, output })));
}

describe('a start with another SECRET than the data was written with', () => {
  it('is refused by the API, a worker and the bounce receiver, before they open anything', async () => {
    const other = { ...h.config, SECRET: OTHER_SECRET };
    for (const start of [
      () => startApi(other, log),
      () => startWorker(other, log),
      () => startBounceReceiver({ ...other, BOUNCE_DOMAIN: 'bounces.example.test', BOUNCE_SMTP_PORT: 0 }, log),
    ]) {
      const refused = await start().then(
        () => undefined,
        (error: unknown) => error as Error,
      );
      expect(refused?.message).toContain(STOPS);
      expect(refused?.message).toContain(WHAT_TO_DO);
      expect(refused?.message).toContain('`npm start` keeps the SECRET it made in DATA_DIR/secret (.data/secret by default).');
    }
    // The SECRET the data was written with still starts.
    expect(await checkSecret(h.env.DATABASE_URL!, TEST_SECRET)).toBe('matched');
  });

  it.each([
    ['npm run start:api', 'src/api/main.ts'],
    ['npm run start:worker', 'src/workers/main.ts'],
    ['npm run start:bounces', 'src/bounces/main.ts'],
  ])('ends %s with the message and exit code 78, without a stack trace', async (_, script) => {
    const { code, output } = await runEntry(script, { SECRET: OTHER_SECRET, PORT: '0', BOUNCE_SMTP_PORT: '0' });
    expect(code, output).toBe(78);
    expect(output).toContain(STOPS);
    expect(output).toContain(WHAT_TO_DO);
    expect(output).not.toMatch(/^\s+at /m);
  });

  it('stops npm start, naming the file its SECRET came from, before the API and the worker start', async () => {
    await writeFile(path.join(dataDir, 'secret'), `${OTHER_SECRET}\n`, { mode: 0o600 });
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      ...h.env,
      SECRET: '',
      PUBLIC_URL: '',
      PORT: String(await freePort()),
      DATA_DIR: dataDir,
      SPAM_FILTER: 'off',
      LOG_LEVEL: 'warn',
    };
    const result = spawnSync('npm', ['start'], { cwd: ROOT, env, encoding: 'utf8', timeout: 60_000 });
    const output = `${result.stdout}${result.stderr}`;
    expect(result.status, output).toBe(1);
    expect(output).toContain(STOPS);
    expect(output).toContain(
      `npm start read this SECRET from ${path.join(dataDir, 'secret')}: put the right one in that file (or set SECRET) and run npm start again.`,
    );
    expect(output).not.toContain('Press Ctrl+C to stop.');
  });

  it('started while PostgreSQL cannot be reached, is run, then stopped (78) once the check can be made', async () => {
    // The receiver's database address leads nowhere at first; later a proxy there reaches PostgreSQL.
    const database = new URL(h.env.DATABASE_URL!);
    const port = await freePort();
    const unreachable = new URL(database);
    unreachable.port = String(port);
    const child = spawn(process.execPath, ['src/bounces/main.ts'], {
      cwd: ROOT,
      env: { ...process.env, ...h.env, DATABASE_URL: unreachable.toString(), SECRET: OTHER_SECRET, BOUNCE_SMTP_PORT: '0', LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    const sockets = new Set<Socket>();
    const proxy = createServer((socket) => {
      const upstream = connect(Number(database.port), database.hostname);
      for (const end of [socket, upstream]) {
        sockets.add(end);
        end.on('error', () => undefined);
      }
      socket.pipe(upstream).pipe(socket);
    });
    try {
      await eventually(async () => (output.includes('bounce receiver ready') ? true : undefined), 20_000, `the receiver to start:\n${output}`);
      expect(output).toContain('SECRET not checked yet: PostgreSQL cannot be reached');
      await new Promise<void>((resolve) => proxy.listen(port, '127.0.0.1', resolve));
      expect(await exited, output).toBe(78);
      expect(output).toContain(STOPS);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      for (const socket of sockets) socket.destroy();
      proxy.close();
    }
  });

  it('is refused by npm run admin too', () => {
    const result = spawnSync('npm', ['run', '--silent', 'admin', '--', 'keys', 'list', 'anyone@example.test'], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: h.env.DATABASE_URL, SECRET: OTHER_SECRET },
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(result.status, result.stderr).toBe(78);
    expect(result.stderr).toContain(STOPS);
  });
});

describe('a database written before the check existed', () => {
  it('is refused under another SECRET than its keys were sealed with, and can adopt a new SECRET when the old one is lost', async () => {
    // As a backup of an earlier version restores it: migrated, keys in it, no check value yet.
    const database = await testDatabase({ migrated: true });
    try {
      const client = new pg.Client({ connectionString: database.url });
      await client.connect();
      await buildKey(onClient(client, TEST_SECRET), { email: 'old@example.test', value: 'an-old-key' });
      await client.end();

      const refused = await checkSecret(database.url, OTHER_SECRET).then(
        () => undefined,
        (error: unknown) => error as Error,
      );
      expect(refused?.message).toContain(`${STOPS}: the newest stored key or webhook secret does not open with this SECRET.`);

      // The SECRET lost for good: the operator adopts a new one, and it starts from then on.
      const adopt = (...flags: string[]) =>
        spawnSync('npm', ['run', '--silent', 'admin', '--', 'secret', 'adopt', ...flags], {
          cwd: ROOT,
          env: { ...process.env, DATABASE_URL: database.url, SECRET: OTHER_SECRET },
          encoding: 'utf8',
          timeout: 30_000,
        });
      // Without --yes it only says what the new SECRET cannot read.
      const asked = adopt();
      expect(asked.status, asked.stderr).toBe(1);
      expect(asked.stdout).toContain('Under this SECRET, 1 key and 0 webhook endpoints (out of 1 in use) are sealed under another one and cannot be read.');
      expect(asked.stdout).toContain('Nothing was changed.');
      expect(asked.stdout).toContain('npm run admin -- secret adopt --yes');
      const checkRows = async () => {
        const reader = new pg.Client({ connectionString: database.url });
        await reader.connect();
        const { rows } = await reader.query<{ n: number }>('select count(*)::int as n from secret_check');
        await reader.end();
        return rows[0]!.n;
      };
      expect(await checkRows()).toBe(0);
      const adopted = adopt('--yes');
      expect(adopted.status, adopted.stderr).toBe(0);
      expect(adopted.stdout).toContain('Under this SECRET, 1 key and 0 webhook endpoints');
      expect(adopted.stdout).toContain('The database now takes this SECRET');
      expect(await checkSecret(database.url, OTHER_SECRET)).toBe('matched');
      const old = await checkSecret(database.url, TEST_SECRET).then(
        () => undefined,
        (error: unknown) => error as Error,
      );
      expect(old?.message).toContain(STOPS);
    } finally {
      await database.drop();
    }
  });
});

describe('a key that cannot be read', () => {
  it('is listed as unavailable by the admin API and the owner console, not a 500', async () => {
    const email = 'unreadable@example.test';
    const good = await h.createKey({ email });
    const bad = await h.createKey({ email, sealedUnder: OTHER_SECRET });

    const listed = await admin('GET', `/admin/keys?email=${email}`);
    expect(listed.status).toBe(200);
    expect(listed.json.keys).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ key: good.key, status: 'active' }),
        expect.objectContaining({ key: null, key_unavailable: KEY_UNAVAILABLE, status: 'active' }),
      ]),
    );

    const owner = await signIn(h, email);
    const page = await owner.get('/owner/keys');
    expect(page.status).toBe(200);
    expect(page.text).toContain(`<code>${good.key}</code>`);
    expect(page.text).toContain('a key that cannot be shown');
    expect(page.text).toContain('This key cannot be shown: the service cannot read its stored copy');
    const api = await owner.api('GET', '/keys');
    expect(api.status).toBe(200);
    expect(api.json.keys.find((key: { id: string }) => key.id === bad.id)).toMatchObject({ key: null, key_unavailable: KEY_UNAVAILABLE });
    for (const path of [`/owner/keys/${bad.id}/submissions`, `/owner/keys/${bad.id}/spam`, `/owner/keys/${bad.id}/webhooks`]) {
      const keyPage = await owner.get(path);
      expect(keyPage.status, path).toBe(200);
      expect(keyPage.text).toContain('a key that cannot be shown');
    }
    // It can still be changed, here deleted.
    const deleted = await owner.api('PATCH', `/keys/${bad.id}`, { status: 'deleted' });
    expect(deleted.status).toBe(200);
    expect(deleted.json).toMatchObject({ key: null, status: 'deleted' });
  });
});
