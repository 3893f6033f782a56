// The upgrade of an `npm start` installation, as docs/upgrading.md tells it: the previous release's
// `npm start` (its real code, test/support/previous-release.ts) takes a key and submissions while
// the mail relay refuses every email, so they wait; it is stopped, and this version's `npm start`
// runs on the same DATA_DIR: it applies the new migrations by itself, every waiting email goes out
// exactly once, and the key made before the upgrade still works.
import { spawn, type ChildProcess } from 'node:child_process';
import { lstatSync, readdirSync } from 'node:fs';
import { mkdtemp, readlink, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/local/services.ts';
import { MIGRATIONS_PATH } from '../../src/shared/infra/db/orm.ts';
import { describeBuild } from '../../src/shared/infra/version.ts';
import { submitJson } from '../support/client.ts';
import { eventually, postJson } from '../support/harness.ts';
import { INSTALL_TIMEOUT_MS, preparePreviousRelease, type Release } from '../support/previous-release.ts';
import { descendants, NPM_START_BANNER_WAIT_MS, npmStartTestTimeout, processTracker } from '../support/processes.ts';
import { startSmtpSink, type SmtpSink } from '../support/smtp-sink.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const SUBMISSIONS = 4;
const refuseEverything = () => ({ code: 451, message: '4.3.0 Try again later' });

const { spawned, startedPids, killAll: killSpawned } = processTracker();

/**
 * The environment a user's shell gives `npm start`: none of this run's service settings or npm
 * variables (the previous release's npm reads its own). Retries and the relay probe are quick, so
 * that what waited goes out within seconds of the upgrade rather than at the next hourly retry.
 */
function shellEnv(dataDir: string, port: number, smtpUrl: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.toLowerCase().startsWith('npm_')));
  for (const name of ['DATABASE_URL', 'REDIS_URL', 'S3_ENDPOINT', 'S3_BUCKET', 'S3_ACCESS_KEY_ID', 'S3_SECRET_ACCESS_KEY', 'PUBLIC_URL', 'SECRET'])
    delete env[name];
  return {
    ...env,
    DATA_DIR: dataDir,
    PORT: String(port),
    SMTP_URL: smtpUrl,
    SPAM_FILTER: 'off',
    LOG_LEVEL: 'warn',
    RATE_LIMIT_MAX: '1000',
    EMAIL_RETRY_BACKOFF_MS: '500',
    EMAIL_RETRY_MAX_BACKOFF_MS: '2000',
    SMTP_PROBE_INTERVAL_MS: '1000',
  };
}

type Running = { child: ChildProcess; output: () => string; banner: Record<string, string> };

/** `npm start` in `cwd` (a checkout of some version), until its banner. */
async function npmStart(cwd: string, env: NodeJS.ProcessEnv): Promise<Running> {
  const child = spawn('npm', ['start'], { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  spawned.push(child);
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  await eventually(
    async () => {
      if (child.exitCode !== null) throw new Error(`npm start exited with ${child.exitCode}:\n${output}`);
      return output.includes('Press Ctrl+C to stop.') ? true : undefined;
    },
    NPM_START_BANNER_WAIT_MS,
    `npm start banner:\n${output}`,
  );
  startedPids.push(...descendants(child.pid!));
  const banner = Object.fromEntries([...output.matchAll(/^ {2}(API|PostgreSQL)\s+(\S.*)$/gm)].map((match) => [match[1]!, match[2]!]));
  return { child, output: () => output, banner };
}

/** The upgrade's first step (Ctrl+C, or a service manager's SIGTERM): it finishes what is in flight and exits 0. */
async function stop(running: Running): Promise<void> {
  const exited = new Promise<number | null>((resolve) => running.child.once('exit', resolve));
  running.child.kill('SIGTERM');
  expect(await exited, running.output()).toBe(0);
}

async function query<T extends pg.QueryResultRow>(url: string, text: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(text)).rows;
  } finally {
    await client.end();
  }
}

describe('upgrading an npm start installation from the previous release', () => {
  let release: Release;
  let sink: SmtpSink;
  let base: string;
  let dataDir: string;

  beforeAll(async () => {
    release = await preparePreviousRelease();
    sink = await startSmtpSink();
    base = await mkdtemp(path.join(tmpdir(), 'cfs-upgrade-'));
    dataDir = path.join(base, 'data');
  }, INSTALL_TIMEOUT_MS + 60_000);

  afterAll(async () => {
    killSpawned();
    // As root the cluster lives where DATA_DIR/postgres links to (docs/getting-started.md).
    const link = path.join(dataDir, 'postgres');
    if (lstatSync(link, { throwIfNoEntry: false })?.isSymbolicLink()) await rm(await readlink(link), { recursive: true, force: true });
    await rm(base, { recursive: true, force: true });
    await sink?.close();
  });

  it(
    'stop, then start this version on the same DATA_DIR: it migrates, every email that waited is delivered once, and the old key still works',
    async () => {
      const port = await freePort();
      const env = shellEnv(dataDir, port, sink.url);
      const api = { url: `http://localhost:${port}` };

      // The previous release runs; the relay refuses every email, so all of them wait.
      sink.behave(refuseEverything);
      const previous = await npmStart(release.root, env);
      expect(previous.output()).toContain(`contact-form-service@${release.version} start`);
      const generated = await postJson(`${api.url}/`, { email: 'owner@example.test' });
      expect(generated.status).toBe(200);
      const key = (generated.json as { key: string }).key;
      const markers = Array.from({ length: SUBMISSIONS }, (_, i) => `before the upgrade ${i}-${Math.random().toString(36).slice(2)}`);
      for (const marker of markers) {
        const answer = await submitJson(api, { access_key: key, email: 'visitor@example.org', message: marker });
        expect(answer.status, answer.text).toBe(200);
      }
      // Each start picks a free port for its PostgreSQL: the address is the banner's.
      const statuses = async (db: string) =>
        [
          ...(await query<{ email_status: string }>(db, 'select email_status from submissions')),
          ...(await query<{ email_status: string }>(db, 'select email_status from key_emails')),
        ].map((row) => row.email_status);
      const before = () => statuses(previous.banner.PostgreSQL!);
      await eventually(async () => ((await before()).every((status) => status === 'retrying') ? true : undefined), 60_000, 'every email refused once');
      expect(await before()).toHaveLength(SUBMISSIONS + 1);
      expect(sink.messages).toHaveLength(0);

      // The upgrade: Ctrl+C, the new code, npm start (git pull and npm ci are the checkout this test runs in).
      await stop(previous);
      sink.behave(undefined);
      const current = await npmStart(ROOT, env);
      expect(current.output()).toContain(`Contact form service ${describeBuild().version} is running:`);
      const applied = await query<{ name: string }>(current.banner.PostgreSQL!, 'select name from mikro_orm_migrations');
      const shipped = readdirSync(MIGRATIONS_PATH).filter((file) => /^Migration\d+.*\.ts$/.test(file));
      expect(applied.map((row) => row.name).sort()).toEqual(shipped.map((file) => file.replace(/\.ts$/, '')).sort());

      // Every email that waited goes out, the key's own included, each once.
      const mailsWith = (text: string) => sink.messages.filter((mail) => (mail.parsed.text ?? '').includes(text)).length;
      // The key's own email: to the owner, with the key, and no visitor's message.
      const keyMails = () =>
        sink.messages.filter(
          (mail) =>
            mail.envelope.to.includes('owner@example.test') &&
            (mail.parsed.text ?? '').includes(key) &&
            !(mail.parsed.text ?? '').includes('visitor@example.org'),
        ).length;
      await eventually(async () => (markers.every((marker) => mailsWith(marker) > 0) && keyMails() > 0 ? true : undefined), 60_000, 'the waiting emails');
      const after = () => statuses(current.banner.PostgreSQL!);
      await eventually(async () => ((await after()).every((status) => status === 'sent') ? true : undefined), 30_000, 'sent recorded');
      // The key made by the previous release still works.
      const later = await submitJson(api, { access_key: key, email: 'visitor@example.org', message: 'after the upgrade' });
      expect(later.status, later.text).toBe(200);
      await eventually(async () => (mailsWith('after the upgrade') === 1 ? true : undefined), 30_000, 'the email after the upgrade');
      // The worker has taken a later job since, so a second send of a waiting email would be in.
      expect(markers.map(mailsWith)).toEqual(markers.map(() => 1));
      expect(keyMails()).toBe(1);
      await stop(current);
    },
    npmStartTestTimeout(2) + 60_000,
  );
});
