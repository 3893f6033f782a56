// `npm start` as a newcomer runs it: real local services, migrations, API and worker; an email in
// the mail catcher; SIGTERM leaves no process behind; a second start finds the earlier data.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/local/services.ts';
import { eventually, postJson } from '../support/harness.ts';
import { descendants, isAlive } from '../support/processes.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');

type Running = { child: ChildProcess; output: () => string; banner: Record<string, string> };

let dataDir: string;
let port: number;
const spawned: ChildProcess[] = [];

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), 'cfs-npm-start-'));
  port = await freePort();
});

const killSpawned = () => {
  for (const child of spawned) if (child.exitCode === null && child.pid) process.kill(-child.pid, 'SIGKILL');
};
// An interrupted run skips afterAll; the process groups of npm start go on the way out.
process.once('exit', killSpawned);

afterAll(async () => {
  killSpawned();
  await rm(dataDir, { recursive: true, force: true });
});

async function npmStart(): Promise<Running> {
  const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: 'warn', RATE_LIMIT_MAX: '100' };
  for (const name of ['DATABASE_URL', 'REDIS_URL', 'S3_ENDPOINT', 'SMTP_URL', 'PUBLIC_URL']) delete env[name];
  const child = spawn('npm', ['start'], { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  spawned.push(child);
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  await eventually(async () => (output.includes('Press Ctrl+C to stop.') ? true : undefined), 90_000, `npm start banner:\n${output}`);
  const banner = Object.fromEntries(
    [...output.matchAll(/^ {2}(API|Mail UI|PostgreSQL|Data)\s+(\S+)$/gm)].map((match) => [match[1]!, match[2]!]),
  );
  return { child, output: () => output, banner };
}

async function stopAndCheckNothingLeft(running: Running): Promise<void> {
  const pids = descendants(running.child.pid!);
  expect(pids.length).toBeGreaterThanOrEqual(4); // launcher, API, worker, PostgreSQL, redis-server …
  const exited = new Promise<number | null>((resolve) => running.child.once('exit', (code) => resolve(code)));
  running.child.kill('SIGTERM');
  expect(await exited).toBe(0);
  const left = await eventually(async () => {
    const alive = pids.filter(isAlive);
    return alive.length === 0 ? alive : undefined;
  }, 15_000, 'every process of npm start to end').catch(() => pids.filter(isAlive));
  expect(left).toEqual([]);
}

async function query<T extends pg.QueryResultRow>(url: string, text: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(text, values)).rows;
  } finally {
    await client.end();
  }
}

type MailDevEmail = { subject: string; text: string; to: Array<{ address: string }> };
const listMail = async (mailUi: string) => (await (await fetch(`${mailUi}/api/email`)).json()) as MailDevEmail[];

describe('npm start', () => {
  let submissionId: string;
  let accessKey: string;

  it('runs the whole service, delivers to the mail catcher and stops cleanly', async () => {
    const running = await npmStart();
    const api = `http://localhost:${port}`;
    expect(running.banner.API).toBe(api);
    expect(running.banner['Mail UI']).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);

    const ready = await fetch(`${api}/readyz`);
    expect(ready.status).toBe(200);

    const generated = await postJson(`${api}/`, { email: 'owner@example.test' });
    expect(generated.status).toBe(200);
    const key = generated.json as { key: string };
    accessKey = key.key;
    const response = await postJson(`${api}/api/contact-api/`, { access_key: key.key, email: 'visitor@example.org', message: 'Hi from npm start' });
    expect(response.status).toBe(200);
    submissionId = response.json.submission_id;

    const mail = await eventually(async () => (await listMail(running.banner['Mail UI']!)).find((m) => m.text.includes(submissionId)));
    expect(mail.to[0]?.address).toBe('owner@example.test');
    expect(mail.text).toContain('Hi from npm start');

    await stopAndCheckNothingLeft(running);
  });

  it('finds the earlier data after a restart', async () => {
    const running = await npmStart();
    const [row] = await query<{ email_status: string }>(running.banner.PostgreSQL!, 'select email_status from submissions where id = $1', [submissionId]);
    expect(row?.email_status).toBe('sent');
    const mails = await listMail(running.banner['Mail UI']!);
    expect(mails.some((m) => m.text.includes(submissionId))).toBe(true);
    // The key still works: the server secret it is stored under was kept in DATA_DIR.
    const again = await postJson(`http://localhost:${port}/api/contact-api/`, { access_key: accessKey, email: 'visitor@example.org', message: 'after restart' });
    expect(again.status).toBe(200);
    await stopAndCheckNothingLeft(running);
  });
});
