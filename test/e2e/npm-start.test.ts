// `npm start` as a newcomer runs it: from a copy of the project in a fresh 0700 directory whose path
// has a space in it, as the current user and (when that is root) once more as an unprivileged user.
// Real local services, migrations, API and worker; an email in the mail catcher; PostgreSQL never
// runs as root; SIGTERM leaves no process behind within 5 s; a second start finds the earlier data.
// Uploaded files are scanned by a local clamd (by the worker) when it has a signature database, and
// not otherwise.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { lstatSync, readFileSync } from 'node:fs';
import { chown, mkdir, mkdtemp, readdir, readlink, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { clamdCommand } from '../../src/local/clamd.ts';
import { freePort, ROOT_POSTGRES_HOME } from '../../src/local/services.ts';
import { EICAR, EICAR_SIGNATURE, writeTestSignatures } from '../support/clamd-signatures.ts';
import { eventually, postJson } from '../support/harness.ts';
import { descendants, isAlive, NPM_START_BANNER_WAIT_MS, npmStartTestTimeout, processTracker } from '../support/processes.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const AS_ROOT = process.getuid?.() === 0;

type Account = { name: string; uid: number; gid: number };
type Running = { child: ChildProcess; output: () => string; banner: Record<string, string> };

/** What npm start started, seen while it ran (its local services run in process groups of their own), killed after. */
const { spawned, startedPids, killAll: killSpawned } = processTracker();

const run = (command: string, args: string[]) => {
  const result = spawnSync(command, args, { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')}: ${result.error?.message ?? ''}${result.stderr}`);
  return result.stdout;
};

/** A system user for the test, removed afterwards. */
function createUser(): Account {
  const name = `cfs-t${randomBytes(4).toString('hex')}`;
  run('useradd', ['--system', '--user-group', '--no-create-home', '--shell', '/usr/sbin/nologin', name]);
  return { name, uid: Number(run('id', ['-u', name])), gid: Number(run('id', ['-g', name])) };
}

function removeUser(account: Account): void {
  spawnSync('userdel', [account.name]);
  spawnSync('groupdel', [account.name]); // left behind where USERGROUPS_ENAB is off
}

/**
 * A copy of the project as a fresh clone has it (plus node_modules, as `npm ci` would make it) in a
 * new 0700 temporary directory with a space in its path, owned by `owner` when given.
 */
async function copyProject(owner?: Account): Promise<{ base: string; project: string }> {
  const base = await mkdtemp(path.join(tmpdir(), 'cfs newcomer-'));
  const project = path.join(base, 'contact form');
  await mkdir(project);
  const skip = new Set(['.git', '.data', '.env', 'coverage']);
  const entries = (await readdir(ROOT)).filter((entry) => !skip.has(entry)).map((entry) => path.join(ROOT, entry));
  run('cp', ['-a', '--', ...entries, project]);
  if (owner) run('chown', ['-R', `${owner.uid}:${owner.gid}`, base]);
  return { base, project };
}

/** The environment of a login shell: no npm or vitest variables of this run, no node_modules on PATH. */
function newcomerEnv(home: string, account: Account | undefined, port: number): NodeJS.ProcessEnv {
  const PATH = (process.env.PATH ?? '')
    .split(':')
    .filter((dir) => !dir.includes('node_modules'))
    .join(':');
  const user = account?.name ?? process.env.USER ?? 'root';
  return { PATH, HOME: home, USER: user, LOGNAME: user, LANG: 'C.UTF-8', PORT: String(port), LOG_LEVEL: 'warn', RATE_LIMIT_MAX: '100' };
}

function uidOf(pid: number): number | undefined {
  try {
    return Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
  } catch {
    return undefined;
  }
}

const parentOf = (pid: number) => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return undefined;
  }
};

const commandOf = (pid: number) => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    return '';
  }
};

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

/** The clamd the global setup found or installed; the tests that need it fail without it. */
function clamdPath(): string {
  const found = inject('testTools').clamd!;
  if (found.problem !== undefined) throw new Error(found.problem);
  return found.path;
}

const accounts: Array<{ label: string; unprivileged: boolean }> = [
  { label: AS_ROOT ? 'as root' : 'as the current user', unprivileged: false },
  ...(AS_ROOT ? [{ label: 'as an unprivileged user created for the test', unprivileged: true }] : []),
];

describe.each(accounts)('npm start in a fresh 0700 directory, $label', ({ unprivileged }) => {
  const asRoot = AS_ROOT && !unprivileged;
  let account: Account | undefined;
  let base: string;
  let project: string;
  let env: NodeJS.ProcessEnv;
  let port: number;
  let submissionId: string;
  let accessKey: string;

  beforeAll(async () => {
    if (unprivileged) account = createUser();
    ({ base, project } = await copyProject(account));
    const home = path.join(base, 'home');
    await mkdir(home, { mode: 0o700 });
    if (account) await chown(home, account.uid, account.gid);
    port = await freePort();
    env = newcomerEnv(home, account, port);
  });

  afterAll(async () => {
    killSpawned();
    // As root the cluster lives where .data/postgres links to, outside the project
    // (docs/getting-started.md#postgresql-under-npm-start-as-root): remove it with the copy.
    const link = path.join(project, '.data', 'postgres');
    if (lstatSync(link, { throwIfNoEntry: false })?.isSymbolicLink()) await rm(await readlink(link), { recursive: true, force: true });
    await rm(base, { recursive: true, force: true });
    if (account) removeUser(account);
  });

  function spawnNpmStart(startEnv = env): ChildProcess {
    const child = spawn('npm', ['start'], {
      cwd: project,
      env: startEnv,
      uid: account?.uid,
      gid: account?.gid,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    spawned.push(child);
    return child;
  }

  async function npmStart(startEnv = env): Promise<Running> {
    const child = spawnNpmStart(startEnv);
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    await eventually(
      async () => {
        if (child.exitCode !== null) throw new Error(`npm start exited with ${child.exitCode}:\n${output}`);
        return output.includes('Press Ctrl+C to stop.') ? true : undefined;
      },
      NPM_START_BANNER_WAIT_MS,
      `npm start banner:\n${output}`,
    );
    startedPids.push(...descendants(child.pid!));
    const banner = Object.fromEntries(
      [...output.matchAll(/^ {2}(API|Mail UI|Bounces|Spam filter|Files|PostgreSQL|Data)\s+(\S.*)$/gm)].map((match) => [match[1]!, match[2]!]),
    );
    return { child, output: () => output, banner };
  }

  /** PostgreSQL runs, and never as root: as the `postgres` user when started by root, else as the user. */
  function expectPostgresNotRoot(running: Running): void {
    const named = descendants(running.child.pid!).filter((pid) => commandOf(pid).includes('/bin/postgres -D'));
    // A backend forked a moment ago still carries the server's command line: the server is the one whose parent is not a server.
    const servers = named.filter((pid) => !named.includes(parentOf(pid) ?? -1));
    expect(servers).toHaveLength(1);
    const uid = uidOf(servers[0]!);
    expect(uid).not.toBe(0);
    if (account) expect(uid).toBe(account.uid);
    else if (AS_ROOT) expect(uid).toBe(Number(run('id', ['-u', 'postgres'])));
  }

  async function stopAndCheckNothingLeft(running: Running): Promise<void> {
    const pids = descendants(running.child.pid!);
    expect(pids.length).toBeGreaterThanOrEqual(4); // launcher, API, worker, PostgreSQL, redis-server …
    const exited = new Promise<number | null>((resolve) => running.child.once('exit', (code) => resolve(code)));
    const t0 = Date.now();
    running.child.kill('SIGTERM');
    expect(await exited).toBe(0);
    const left = await eventually(
      async () => {
        const alive = pids.filter(isAlive);
        return alive.length === 0 ? alive : undefined;
      },
      15_000,
      'every process of npm start to end',
    ).catch(() => pids.filter(isAlive));
    expect(left).toEqual([]);
    // Idle, as here, everything is gone within 5 s.
    expect(Date.now() - t0).toBeLessThan(5_000);
    // Nothing above the project was opened up for the postgres user.
    expect((await stat(base)).mode & 0o777).toBe(0o700);
  }

  it(
    'runs the whole service, delivers to the mail catcher and stops cleanly',
    async () => {
      expect((await stat(base)).mode & 0o777).toBe(0o700);
      // clamd has nothing to load: the service runs, and says its files go out unscanned.
      const noSignatures = path.join(base, 'no-signatures');
      await mkdir(noSignatures);
      const running = await npmStart({ ...env, CLAMD_DATABASE_DIR: noSignatures, CLAMD_PATH: clamdPath() });
      const api = `http://localhost:${port}`;
      expect(running.banner.API).toBe(api);
      expect(running.banner.Files).toBe(`not scanned (clamd has no signature database in ${noSignatures}: run freshclam, or set CLAMD_DATABASE_DIR)`);
      expect(running.banner['Mail UI']).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(running.banner.Data).toBe(path.join(project, '.data'));
      expectPostgresNotRoot(running);

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
    },
    npmStartTestTimeout(1),
  );

  it(
    'finds the earlier data after a restart, and scans files with a clamd of its own once clamd has signatures',
    async () => {
      const signatures = path.join(base, 'signatures');
      await writeTestSignatures(signatures);
      if (account) run('chown', ['-R', `${account.uid}:${account.gid}`, signatures]);
      const running = await npmStart({ ...env, CLAMD_DATABASE_DIR: signatures, CLAMD_PATH: clamdPath() });
      const socket = path.join(project, '.data', 'clamd', 'clamd.sock');
      expect(running.banner.Files).toBe(`scanned by clamd at ${socket}`);
      expect(await clamdCommand(socket, 'PING')).toBe('PONG');
      // clamd runs as whoever ran npm start (no User line: it never switches to a clamav user).
      const clamd = descendants(running.child.pid!).filter((pid) => commandOf(pid).includes('clamd --foreground'));
      expect(clamd).toHaveLength(1);
      expect(uidOf(clamd[0]!)).toBe(account?.uid ?? process.getuid!());
      // The worker scans with it: a file holding the EICAR test string is found infected.
      const upload = new FormData();
      upload.set('access_key', accessKey);
      upload.set('email', 'visitor@example.org');
      upload.set('message', 'A file for you');
      upload.append('file', new Blob([EICAR], { type: 'text/plain' }), 'notes.txt');
      const posted = await fetch(`http://localhost:${port}/api/contact-api/`, { method: 'POST', body: upload, headers: { accept: 'application/json' } });
      expect(posted.status).toBe(200);
      const withFile = ((await posted.json()) as { submission_id: string }).submission_id;
      const scanned = await eventually(async () => {
        const [file] = await query<{ scan_outcome: string | null; scan_detail: string | null }>(
          running.banner.PostgreSQL!,
          'select scan_outcome, scan_detail from attachments where submission_id = $1',
          [withFile],
        );
        return file?.scan_outcome ? file : undefined;
      });
      expect(scanned).toEqual({ scan_outcome: 'infected', scan_detail: EICAR_SIGNATURE });
      const [row] = await query<{ email_status: string }>(running.banner.PostgreSQL!, 'select email_status from submissions where id = $1', [submissionId]);
      expect(row?.email_status).toBe('sent');
      const mails = await listMail(running.banner['Mail UI']!);
      expect(mails.some((m) => m.text.includes(submissionId))).toBe(true);
      // The key still works: the server secret it is stored under was kept in DATA_DIR.
      const again = await postJson(`http://localhost:${port}/api/contact-api/`, {
        access_key: accessKey,
        email: 'visitor@example.org',
        message: 'after restart',
      });
      expect(again.status).toBe(200);
      await stopAndCheckNothingLeft(running);
    },
    npmStartTestTimeout(1),
  );

  it(
    'runs the bounce receiver when BOUNCE_DOMAIN is set: a sample bounce turns a message `bounced`',
    async () => {
      const bouncePort = await freePort();
      const bounceEnv = { ...env, BOUNCE_DOMAIN: 'bounces.localhost', BOUNCE_SMTP_PORT: String(bouncePort) };
      const running = await npmStart(bounceEnv);
      expect(running.banner.Bounces).toBe(`smtp://0.0.0.0:${bouncePort} for bounces.localhost`);
      const sample = spawnSync('npm', ['run', 'bounce:sample', '--', submissionId], {
        cwd: project,
        env: bounceEnv,
        uid: account?.uid,
        gid: account?.gid,
        encoding: 'utf8',
      });
      expect(sample.status, `${sample.stdout}${sample.stderr}`).toBe(0);
      expect(sample.stdout).toMatch(/^Sent to b-s-[0-9a-f]{32}-[0-9a-f]{16}@bounces\.localhost: 250 /m);
      const [row] = await query<{ email_status: string; bounce_status: string }>(
        running.banner.PostgreSQL!,
        'select email_status, bounce_status from submissions where id = $1',
        [submissionId],
      );
      expect(row).toEqual({ email_status: 'bounced', bounce_status: '5.1.1' });
      await stopAndCheckNothingLeft(running);
    },
    npmStartTestTimeout(1),
  );

  it(
    'runs rspamd unless told not to: each message is checked with the form rules, and sent',
    async () => {
      // A verdict is judged: the first check of a fresh rspamd on a busy machine may take longer than
      // the 500 ms after which the email would go out unchecked.
      const running = await npmStart({ ...env, SPAM_CHECK_TIMEOUT_MS: '10000' });
      const runFiles = createHash('sha256')
        .update(path.join(project, '.data', 'rspamd'))
        .digest('hex')
        .slice(0, 16);
      // Stopped whatever happens: a start left running would fail the tests after this one.
      try {
        // Its scanner on a Unix socket where the path can hold one: under /var/lib as root; otherwise in
        // the project's data directory, whose path here has a space (rspamd would cut it there): TCP.
        const [scanner, learning] = running.banner['Spam filter']!.split(' (rspamd; learning at ');
        expect(scanner).toEqual(
          asRoot ? `unix:${path.join(ROOT_POSTGRES_HOME, 'rspamd', runFiles, 'run', 'normal.sock')}` : expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/),
        );
        expect(learning).toMatch(/^http:\/\/127\.0\.0\.1:\d+\)$/);
        if (asRoot) {
          // Its statistics Redis on a socket beside the scanner's, which only rspamd's user may use.
          const redisSocket = await stat(path.join(ROOT_POSTGRES_HOME, 'rspamd', runFiles, 'run', 'redis.sock'));
          expect(redisSocket.isSocket()).toBe(true);
          expect(redisSocket.mode & 0o777).toBe(0o700);
          expect(redisSocket.uid).toBe(Number(spawnSync('id', ['-u', '_rspamd'], { encoding: 'utf8' }).stdout.trim()));
        }
        const api = `http://localhost:${port}`;
        const links = Array.from({ length: 12 }, (_, i) => `https://seo-deal${i}.com/`).join(' ');
        const linkFarm = await postJson(`${api}/api/contact-api/`, { access_key: accessKey, email: 'visitor@example.org', message: `Rankings! ${links}` });
        const plain = await postJson(`${api}/api/contact-api/`, { access_key: accessKey, email: 'visitor@example.org', message: 'A plain question' });
        type Checked = { email_status: string; spam_verdict: string | null; spam_reasons: Array<{ symbol: string }> | null };
        const sentRow = (id: string) =>
          eventually(async () => {
            const [row] = await query<Checked>(running.banner.PostgreSQL!, 'select email_status, spam_verdict, spam_reasons from submissions where id = $1', [
              id,
            ]);
            return row?.email_status === 'sent' ? row : undefined;
          });
        // Before any owner has marked anything, links alone hold nothing: the link farm is checked
        // (rspamd answered, with the service's own rule) and sent.
        const farm = await sentRow(linkFarm.json.submission_id);
        expect(farm.spam_verdict).toBe('ham');
        expect(farm.spam_reasons?.map((reason) => reason.symbol)).toContain('FORM_LINK_FARM');
        expect((await sentRow(plain.json.submission_id)).spam_verdict).toBe('ham');
      } finally {
        await stopAndCheckNothingLeft(running);
      }
      // As root rspamd's run files live under /var/lib (its user cannot reach a 0700 home): gone with it.
      expect(lstatSync(path.join(ROOT_POSTGRES_HOME, 'rspamd', runFiles), { throwIfNoEntry: false })).toBeUndefined();
      // rspamd reads some paths only up to their first space: nothing is left where this one's cuts off.
      expect(lstatSync(base.slice(0, base.indexOf(' ')), { throwIfNoEntry: false })).toBeUndefined();

      const off = await npmStart({ ...env, SPAM_FILTER: 'off' });
      expect(off.banner['Spam filter']).toBe('off (SPAM_FILTER=off)');
      await stopAndCheckNothingLeft(off);
    },
    npmStartTestTimeout(2),
  );

  // Only root may install packages: anyone else is told the package and the command.
  if (unprivileged || !AS_ROOT) {
    it('tells an unprivileged user without redis-server what to install', async () => {
      // A PATH with npm, node and sh (npm runs scripts with it) but no redis-server.
      const bin = path.join(base, 'bin');
      await mkdir(bin);
      for (const program of ['npm', 'node', 'sh']) {
        const found = spawnSync('sh', ['-c', `command -v ${program}`], { env, encoding: 'utf8' }).stdout.trim(); // the newcomer's own
        await symlink(found, path.join(bin, program));
      }
      const child = spawnNpmStart({ ...env, PATH: bin });
      let output = '';
      child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
      const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
      expect(code, output).toBe(1);
      expect(output).toContain('Redis could not start: redis-server is not installed (not found on PATH)');
      expect(output).toContain('It can be installed automatically only as root.');
      expect(output).toContain('What to do: install the redis-server package (Debian/Ubuntu: `sudo apt-get install -y redis-server`)');
      expect(output).not.toContain('undefined');
      expect(descendants(child.pid!).filter(isAlive)).toEqual([]); // the PostgreSQL it had started is stopped
    });
  }
});

describe('npm start when a local service cannot start', () => {
  let dataDir: string;

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'cfs broken-'));
  });

  afterAll(async () => {
    const link = path.join(dataDir, 'postgres');
    if (lstatSync(link, { throwIfNoEntry: false })?.isSymbolicLink()) await rm(await readlink(link), { recursive: true, force: true });
    await rm(dataDir, { recursive: true, force: true });
  });

  it('names the service, gives the tool its own words and says what to do', async () => {
    // A data directory left by a PostgreSQL this one cannot read.
    await mkdir(path.join(dataDir, 'postgres'), { recursive: true, mode: 0o700 });
    await writeFile(path.join(dataDir, 'postgres', 'PG_VERSION'), '9.6\n');
    await writeFile(path.join(dataDir, 'postgres', 'postgresql.conf'), '');
    const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, PORT: String(await freePort()), LOG_LEVEL: 'warn' };
    for (const name of ['DATABASE_URL', 'REDIS_URL', 'S3_ENDPOINT', 'SMTP_URL', 'PUBLIC_URL']) delete env[name];
    const child = spawn('npm', ['start'], { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    spawned.push(child);
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code, output).not.toBe(0);
    expect(output).toContain('PostgreSQL could not start');
    expect(output).toMatch(/incompatible with server/); // PostgreSQL's own explanation
    expect(output).toMatch(/What to do: .*DATABASE_URL/);
    expect(output).not.toContain('undefined');
  });
});
