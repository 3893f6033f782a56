// Before anything starts or sends: `npm start` and each process check every setting, the data
// directory and their ports. A failure is one line naming the setting or the port (and what holds
// it), exit 78, with no service started, no email sent and no row changed. Two starts on one
// DATA_DIR: the second names the first; a lock left by a start that crashed is taken over.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/local/services.ts';
import { submitJson } from '../support/client.ts';
import { buildWebhookEndpoint } from '../support/factories.ts';
import { eventually, startHarness, type Harness } from '../support/harness.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');

let h: Harness;
let taken: Server;
let takenPort: number;
const dirs: string[] = [];
const children: ChildProcess[] = [];

beforeAll(async () => {
  // No worker: the emails and webhook deliveries wait, as they do in a data directory between starts.
  h = await startHarness({ worker: false });
  // Another program on a port, as another instance of the service would be.
  taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  takenPort = (taken.address() as { port: number }).port;
});
afterAll(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGKILL');
  await new Promise((resolve) => taken?.close(resolve));
  await h?.stop();
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

async function dataDir(): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'cfs-preflight-'));
  dirs.push(dir);
  return dir;
}

type Run = { child: ChildProcess; output: () => string; exited: Promise<number | null> };

/** `npm <args>` from the project, in a process group of its own (killed after the test). */
function npm(args: string[], env: NodeJS.ProcessEnv): Run {
  const child = spawn('npm', args, { cwd: ROOT, env: { ...process.env, ...env }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return { child, output: () => output, exited: new Promise((resolve) => child.once('exit', (code) => resolve(code))) };
}

/** The lines a process wrote, without npm's own ("> contact-form-service@… start", the command). */
const ownLines = (output: string) =>
  output
    .split('\n')
    .filter((line) => line.trim() && !line.startsWith('>'))
    .map((line) => line.trim());

/** npm start on the harness's services (none started locally), without the spam filter. */
const startEnv = (dir: string, settings: Record<string, string> = {}) => ({ ...h.env, DATA_DIR: dir, SPAM_FILTER: 'off', LOG_LEVEL: 'warn', ...settings });

const rows = () =>
  Promise.all([
    h.sql('select id, email_status, email_attempts from submissions order by id'),
    h.sql('select id, email_status, email_attempts from webhook_deliveries order by id'),
  ]);

describe('npm start with the API port taken', () => {
  it('says which port and what holds it, exits 78, and leaves pending emails and webhook deliveries untouched', async () => {
    const key = await h.createKey();
    await buildWebhookEndpoint(h, { key });
    for (let n = 0; n < 4; n += 1) {
      const response = await submitJson(h, { access_key: key.key, email: 'visitor@example.org', message: `Waiting ${n}` });
      expect(response.status).toBe(200);
    }
    const before = await rows();
    expect(before[0]).toHaveLength(4);
    // Their webhook deliveries are written with them, pending: a worker that ran would have sent them.
    expect(before[1]).toHaveLength(4);

    const dir = await dataDir();
    const run = npm(['start'], startEnv(dir, { PORT: String(takenPort), HOST: '127.0.0.1' }));
    expect(await run.exited).toBe(78);
    expect(ownLines(run.output())).toEqual([
      `npm start: PORT: port 127.0.0.1:${takenPort} is already in use by PID ${process.pid}: ${commandOf(process.pid)}; stop it or set PORT to a free port.`,
    ]);
    expect(run.output()).not.toContain('running');
    // Nothing of the run is left that could still take these jobs (a worker it started would carry
    // its DATA_DIR): what the rows say now is final.
    await eventually(async () => (processesOn(dir).length === 0 ? true : undefined), 30_000, 'every process of the run gone');
    expect(await rows()).toEqual(before);
    expect(h.sink.messages).toHaveLength(0);
  }, 60_000);
});

/** The processes running with this data directory: a run of `npm start` and whatever it started. */
function processesOn(dir: string): string[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(`DATA_DIR=${dir}`);
      } catch {
        return false; // gone while we read
      }
    });
}

/** A process's command line as the message shows it: shortened to 120 characters. */
function commandOf(pid: number): string {
  const command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
  return command.length > 120 ? `${command.slice(0, 117)}...` : command;
}

describe('settings are checked before any service starts', () => {
  it.each([
    ['PORT', 'abc', 'PORT: must be a whole number'],
    ['SECRET', 'short', 'SECRET: must be at least 32 characters'],
    ['LOCAL_POSTGRES_PORT', '70000', 'LOCAL_POSTGRES_PORT: must be at most 65535'],
  ])(
    '%s=%s: one line naming it, exit 78, nothing started in DATA_DIR',
    async (name, value, message) => {
      const dir = await dataDir();
      // No service of the harness: npm start would start PostgreSQL, Redis, S3 and the mail catcher.
      const run = npm(['start'], { DATA_DIR: dir, SPAM_FILTER: 'off', LOG_LEVEL: 'warn', [name]: value });
      expect(await run.exited).toBe(78);
      const lines = ownLines(run.output());
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain(message);
      // Nothing was started or written: no cluster, no generated secret, no lock left.
      expect(await readdir(dir)).toEqual([]);
    },
    30_000,
  );

  it('a local service port that is taken is named with its setting', async () => {
    const dir = await dataDir();
    const run = npm(['start'], { DATA_DIR: dir, SPAM_FILTER: 'off', LOG_LEVEL: 'warn', LOCAL_REDIS_PORT: String(takenPort) });
    expect(await run.exited).toBe(78);
    expect(ownLines(run.output())).toEqual([
      expect.stringMatching(new RegExp(`^npm start: LOCAL_REDIS_PORT: port 127\\.0\\.0\\.1:${takenPort} is already in use by PID ${process.pid}`)),
    ]);
    expect(existsSync(path.join(dir, 'postgres'))).toBe(false);
  }, 30_000);

  it('a refused start leaves no DATA_DIR behind that it created', async () => {
    const dir = path.join(await dataDir(), 'new', '.data');
    const run = npm(['start'], { DATA_DIR: dir, SPAM_FILTER: 'off', LOG_LEVEL: 'warn', PORT: String(takenPort), HOST: '127.0.0.1' });
    expect(await run.exited).toBe(78);
    expect(ownLines(run.output())).toEqual([expect.stringMatching(/^npm start: PORT: port .* is already in use/)]);
    expect(existsSync(path.dirname(dir))).toBe(false);
  }, 30_000);
});

describe('each process checks its ports before it starts anything', () => {
  it.each([
    ['start:api', 'PORT', {}],
    ['start:worker', 'METRICS_PORT', { ADMIN_TOKEN: 'preflight-admin-token-0123456789' }],
    ['start:bounces', 'BOUNCE_SMTP_PORT', { BOUNCE_DOMAIN: 'bounces.example.test', BOUNCE_SMTP_HOST: '127.0.0.1' }],
  ])(
    'npm run %s with %s taken: one line, exit 78',
    async (script, setting, extra) => {
      const run = npm(['run', '--silent', script], { ...h.env, HOST: '127.0.0.1', ...extra, [setting]: String(takenPort) });
      expect(await run.exited).toBe(78);
      expect(ownLines(run.output())).toEqual([
        `${setting}: port 127.0.0.1:${takenPort} is already in use by PID ${process.pid}: ${commandOf(process.pid)}; stop it or set ${setting} to a free port.`,
      ]);
      expect(h.sink.messages).toHaveLength(0);
    },
    30_000,
  );
});

describe('one npm start per DATA_DIR', () => {
  const banner = async (run: Run) =>
    eventually(
      async () => {
        if (run.child.exitCode !== null) throw new Error(`npm start exited with ${run.child.exitCode}:\n${run.output()}`);
        return run.output().includes('Press Ctrl+C to stop.') ? true : undefined;
      },
      60_000,
      'the banner',
    );
  const stop = async (run: Run) => {
    run.child.kill('SIGTERM');
    expect(await run.exited).toBe(0);
  };

  it('a second start on the same DATA_DIR names the first one, and never advises moving the data away', async () => {
    const dir = await dataDir();
    const first = npm(['start'], startEnv(dir, { PORT: String(await freePort()) }));
    await banner(first);
    const second = npm(['start'], startEnv(dir, { PORT: String(await freePort()) }));
    expect(await second.exited).toBe(78);
    const startPid = Number(readFileSync(path.join(dir, 'npm-start.pid'), 'utf8'));
    expect(ownLines(second.output())).toEqual([
      `npm start: another start (PID ${startPid}) is using DATA_DIR ${dir}; stop it first (Ctrl+C in its terminal, or kill ${startPid}).`,
    ]);
    expect(second.output()).not.toMatch(/move/i);
    await stop(first);
    expect(existsSync(path.join(dir, 'npm-start.pid'))).toBe(false);
  }, 120_000);

  it.each([
    ['whose PID is no longer running', async () => deadPid()],
    ['whose PID is another program', async () => process.pid],
  ])(
    'a lock left by a start that crashed, %s, is taken over',
    async (_, pid) => {
      const dir = await dataDir();
      await writeFile(path.join(dir, 'npm-start.pid'), `${await pid()}\n`);
      const run = npm(['start'], startEnv(dir, { PORT: String(await freePort()) }));
      await banner(run);
      await stop(run);
    },
    120_000,
  );
});

/** The PID of a process that has ended. */
async function deadPid(): Promise<number> {
  const child = spawn('true');
  await new Promise((resolve) => child.once('exit', resolve));
  return child.pid!;
}
