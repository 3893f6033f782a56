// What a start says it sends with, and the relay checked once at start: the worker's log and the
// `npm start` banner name the relay (its password hidden), MAIL_FROM, the bounce domain and the
// spam filter; a relay that refuses the login or cannot be reached is a warning naming SMTP_URL and
// the relay's answer, and the worker runs on.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/shared/infra/log.ts';
import { freePort } from '../../src/local/services.ts';
import { startWorker, type WorkerProcess } from '../../src/workers/worker.ts';
import { eventually, startHarness, type Harness } from '../support/harness.ts';
import { startSmtpSink, type SmtpSink } from '../support/smtp-sink.ts';
import { describeBuild } from '../../src/shared/infra/version.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const PASSWORD = 'relay-password-never-shown';
type Line = { level: number; msg: string; [field: string]: unknown };

let h: Harness;
let refusing: SmtpSink;
const workers: WorkerProcess[] = [];
const children: ChildProcess[] = [];
let dataDir: string;

beforeAll(async () => {
  h = await startHarness({ worker: false });
  // A relay whose answer to every login is the one a wrong password gets.
  refusing = await startSmtpSink();
  refusing.refuse('auth', { code: 535, message: '5.7.8 Authentication credentials invalid' });
  dataDir = await mkdtemp(path.join(tmpdir(), 'cfs-start-checks-'));
});
afterAll(async () => {
  // npm start's own process group (it was started detached): the launcher, its API and its worker.
  for (const child of children) if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGKILL');
  for (const worker of workers) await worker.shutdown.run();
  await refusing?.close();
  await h?.stop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

const withLogin = (url: string) => url.replace('smtp://', `smtp://forms:${PASSWORD}@`);

/** A worker on the harness's services with these settings; its log lines, as they come. */
async function workerWith(settings: Partial<Harness['config']>): Promise<Line[]> {
  const lines: Line[] = [];
  const log = createLogger('worker', 'info', { write: (line: string) => void lines.push(JSON.parse(line) as Line) });
  workers.push(await startWorker({ ...h.config, ...settings }, log));
  return lines;
}

const warningAbout = (lines: Line[]) =>
  eventually(async () => lines.find((line) => line.level === 40 && line.msg.startsWith('SMTP_URL:')), 20_000, 'the relay warning');

describe("the worker's start log", () => {
  it('names the relay without its password, MAIL_FROM, bounces and the spam filter, and says the relay accepted the login', async () => {
    const lines = await workerWith({ SMTP_URL: withLogin(h.sink.url) });
    expect(lines.find((line) => line.msg === 'delivery settings')).toMatchObject({
      SMTP_URL: `smtp://forms:***@127.0.0.1:${h.sink.port}`,
      MAIL_FROM: 'Contact Form <forms@example.test>',
      BOUNCE_DOMAIN: 'off',
      SPAM_FILTER_URL: 'off',
    });
    await eventually(async () => lines.find((line) => line.msg === 'the mail relay answered and accepted the login'), 20_000, 'the relay check');
    expect(JSON.stringify(lines)).not.toContain(PASSWORD);
  });

  it('names the bounce domain and the spam filter when they are set', async () => {
    const lines = await workerWith({
      BOUNCE_DOMAIN: 'bounces.example.test',
      SPAM_FILTER_URL: 'http://127.0.0.1:11333',
      SPAM_FILTER_CONTROLLER_URL: 'http://127.0.0.1:11334',
      // Nothing answers there: the start does not wait for it (that wait is test/spam/start-wait.test.ts).
      SPAM_FILTER_START_WAIT_MS: 0,
    });
    expect(lines.find((line) => line.msg === 'delivery settings')).toMatchObject({
      BOUNCE_DOMAIN: 'bounces.example.test',
      SPAM_FILTER_URL: 'http://127.0.0.1:11333',
    });
  });

  it('warns, naming SMTP_URL and the answer, when the relay refuses the login; the worker runs on', async () => {
    const lines = await workerWith({ SMTP_URL: withLogin(refusing.url) });
    const warning = await warningAbout(lines);
    expect(warning.msg).toBe(
      `SMTP_URL: the mail relay smtp://forms:***@127.0.0.1:${refusing.port} refused the login of "forms": 535 5.7.8 Authentication credentials invalid. ` +
        'Emails wait and are retried until it accepts them; check the user and password in SMTP_URL.',
    );
    expect(JSON.stringify(lines)).not.toContain(PASSWORD);
    expect(workers.at(-1)!.worker.isRunning()).toBe(true);
  });

  it('warns, naming SMTP_URL, when the relay cannot be reached', async () => {
    const port = await freePort(); // nothing listens there
    const lines = await workerWith({ SMTP_URL: `smtp://127.0.0.1:${port}` });
    const warning = await warningAbout(lines);
    expect(warning.msg).toMatch(new RegExp(`^SMTP_URL: the mail relay smtp://127\\.0\\.0\\.1:${port} cannot be reached: .*ECONNREFUSED`));
    expect(warning.msg).toContain('check the host, the port and smtp:// or smtps:// in SMTP_URL');
  });
});

describe('the npm start banner', () => {
  it('names the version, the relay without its password, MAIL_FROM, bounces and the spam filter, and shows the relay warning', async () => {
    const port = await freePort();
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      ...h.env,
      SMTP_URL: withLogin(refusing.url),
      PORT: String(port),
      PUBLIC_URL: '',
      DATA_DIR: dataDir,
      SPAM_FILTER: 'off',
      LOG_LEVEL: 'warn',
      // An empty signature database: files are not scanned, whether or not clamd is installed here.
      CLAMD_DATABASE_DIR: await mkdtemp(path.join(dataDir, 'no-signatures-')),
    };
    const child = spawn('npm', ['start'], { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const has = (text: string) => async () => {
      if (child.exitCode !== null) throw new Error(`npm start exited with ${child.exitCode}:\n${output}`);
      return output.includes(text) ? true : undefined;
    };
    await eventually(has('Press Ctrl+C to stop.'), 60_000, 'the banner');
    const relay = `smtp://forms:***@127.0.0.1:${refusing.port}`;
    expect(output).toContain(
      [
        `Contact form service ${describeBuild().version} is running:`,
        `  API          http://127.0.0.1:${port}`,
        `  Mail relay   ${relay}`,
        '  Mail from    Contact Form <forms@example.test>',
        '  Bounces      off (BOUNCE_DOMAIN is unset)',
        '  Spam filter  off (SPAM_FILTER=off)',
        '  Files        not scanned (',
      ].join('\n'),
    );
    expect(output).toMatch(new RegExp(`\\n  Files {8}not scanned \\([^\\n]+\\)\\n  Data {9}${dataDir.replaceAll(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\n`));
    // The worker's check, in the same terminal.
    await eventually(has(`SMTP_URL: the mail relay ${relay} refused the login of "forms"`), 30_000, 'the relay warning');
    expect(output).not.toContain(PASSWORD);
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });
});
