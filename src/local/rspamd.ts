// A local rspamd (Debian's package) for `npm start` and the tests: the stock rules with the
// project's configuration (../../rspamd: no network lookups, two Bayes classifiers), its scanner
// on a Unix socket (or a free loopback port) and its controller on a free loopback port, its
// statistics in a Redis of its own (apart from the queues, which must never be evicted), reached
// on a Unix socket too where the path fits. As root it runs as the `_rspamd` user, with its
// working files under /var/lib/contact-form-service, which that user can reach wherever the
// project is.
import { spawnSync, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { chmod, cp, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { MAX_SOCKET_PATH_BYTES } from '../shared/infra/config-schema.ts';
import { postOnce, unixSocketUrl } from '../shared/infra/one-shot-http.ts';
import { ROOT_POSTGRES_HOME } from './postgres.ts';
import { freePort, LOOPBACK, ServiceStartError, spawnTracked, starting, stopChild, type LocalService } from './processes.ts';
import { startRedis } from './services.ts';
import { MissingToolError, requireSystemTool, spawnFailure } from './system-tools.ts';

/** The project's rspamd configuration: what it adds to and overrides in the stock one. */
export const RSPAMD_CONFIG_DIR = fileURLToPath(new URL('../../rspamd', import.meta.url));
const STOCK_CONFIG = '/etc/rspamd/rspamd.conf';
/** How long rspamd may take to stop on SIGTERM before its process group is killed. */
const RSPAMD_STOP_GRACE_MS = 1_000;

export type RspamdOptions = {
  /** Where its Redis keeps the statistics (kept across restarts); unset: a throwaway Redis. */
  dir?: string;
  /**
   * The controller on a Unix socket (mode 0600) beside the scanner's, where its path fits one,
   * instead of loopback TCP. rspamd lets every client of that socket learn without the password.
   */
  controllerOnSocket?: boolean;
  /** The controller's loopback port (the scanner, when on TCP, takes the next one); unset: free ports. */
  controllerPort?: number;
};

export type RspamdService = LocalService & {
  /** The scanner (POST /checkv2): SPAM_FILTER_URL, `unix:` and its socket when the path fits one. */
  url: string;
  /** The controller (POST /learnspam, /learnham): SPAM_FILTER_CONTROLLER_URL. */
  controllerUrl: string;
  /** The controller's password, made for this start: SPAM_FILTER_PASSWORD. */
  password: string;
  child: ChildProcess;
  /** The Redis that keeps its statistics. */
  statisticsRedis: ChildProcess;
};

/** Makes sure `rspamd` exists, installing Debian's package when this is Debian or Ubuntu as root. */
export function ensureRspamd(): string {
  try {
    return requireSystemTool({
      binary: 'rspamd',
      package: 'rspamd',
      neededFor: 'the spam filter',
      pathVariable: 'RSPAMD_PATH',
      alternative: 'or set SPAM_FILTER_URL to a running rspamd, or SPAM_FILTER=off',
    });
  } catch (error) {
    if (error instanceof MissingToolError) throw new ServiceStartError('rspamd', error.reason, error.remedy);
    throw error;
  }
}

export async function startRspamd(options: RspamdOptions = {}): Promise<RspamdService> {
  const binary = ensureRspamd();
  const remedy =
    "read rspamd's output above; to use an rspamd of your own instead, set SPAM_FILTER_URL (and SPAM_FILTER_CONTROLLER_URL), or turn the filter off with SPAM_FILTER=off.";
  const asRoot = process.getuid?.() === 0;
  const work = await starting('rspamd', remedy, () => workingDirectory(options.dir));
  // Under /var/lib (as root) or in a temporary directory it is only this start's copy of the
  // configuration and rspamd's run files: the statistics are in the Redis under the data directory.
  const removeWork = async () => {
    if (!options.dir || asRoot) await rm(work, { recursive: true, force: true });
  };
  // The workers reach the scanner, and rspamd its Redis, on Unix sockets in rspamd's run directory
  // where their paths fit: a check then costs the worker, rspamd and its Redis less CPU than over
  // TCP (docs/benchmarks.md).
  const [scanSocket, redisSocket] = [unixSocketFor(path.join(work, 'run', 'normal.sock')), unixSocketFor(path.join(work, 'run', 'redis.sock'))];
  const controllerSocket = options.controllerOnSocket ? unixSocketFor(path.join(work, 'run', 'controller.sock')) : undefined;
  let redis: Awaited<ReturnType<typeof startRedis>>;
  try {
    redis = await startRedis({ ...(options.dir ? { dir: path.join(options.dir, 'redis') } : {}), ...(redisSocket ? { unixSocket: redisSocket } : {}) });
  } catch (error) {
    await removeWork();
    throw error;
  }
  let spawned: ChildProcess | undefined;
  try {
    // Redis runs as root and makes its socket for its own user only: rspamd's user is let in.
    if (redisSocket && asRoot) await starting('rspamd', remedy, async () => chownToRspamd(redisSocket));
    const [scanPort, controllerPort] = options.controllerPort ? [options.controllerPort + 1, options.controllerPort] : [await freePort(), await freePort()];
    // Loopback is trusted by rspamd's stock settings, but other users of this machine reach it too.
    const password = randomBytes(18).toString('base64url');
    const variables = {
      LOCAL_CONFDIR: path.join(work, 'conf'),
      DBDIR: path.join(work, 'db'),
      RUNDIR: path.join(work, 'run'),
      LOGDIR: path.join(work, 'log'),
      CFS_SCAN_SOCKET: scanSocket ? `${scanSocket} mode=0600` : `${LOOPBACK}:${scanPort}`,
      CFS_CONTROLLER_SOCKET: controllerSocket ? `${controllerSocket} mode=0600` : `${LOOPBACK}:${controllerPort}`,
      CFS_REDIS_SERVER: redisSocket ?? `${LOOPBACK}:${redis.port}`,
      CFS_REDIS_DB: '0',
      CFS_CONTROLLER_PASSWORD: password,
      CFS_HS_CACHE_DIR: await compiledRulesDirectory(),
    };
    const child = spawnTracked(
      'SIGTERM',
      binary,
      [
        '-f',
        ...(asRoot ? ['-u', '_rspamd', '-g', '_rspamd'] : []),
        '-c',
        STOCK_CONFIG,
        ...Object.entries(variables).map(([name, value]) => `--var=${name}=${value}`),
      ],
      // rspamd forks its workers: they are stopped with it, as one process group.
      { stdio: ['ignore', 'pipe', 'pipe'], ownGroup: true },
    );
    spawned = child;
    let output = '';
    const keep = (chunk: Buffer) => void (output = (output + chunk.toString()).slice(-4_000));
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    const url = scanSocket ? unixSocketUrl(scanSocket) : `http://${LOOPBACK}:${scanPort}`;
    // The first start compiles the rules' regular expressions before rspamd answers, cached in DBDIR
    // after (docs/benchmarks.md#memory-and-first-start): waitForPing allows it a minute.
    await starting('rspamd', remedy, () => waitForPing(url, child, () => output));
    return {
      name: 'rspamd',
      url,
      controllerUrl: controllerSocket ? unixSocketUrl(controllerSocket) : `http://${LOOPBACK}:${controllerPort}`,
      password,
      child,
      statisticsRedis: redis.child,
      stop: async () => {
        // rspamd waits for its workers to end (seconds on a busy machine) but keeps nothing itself:
        // its statistics are in its Redis, stopped cleanly below. So its group is killed soon.
        await stopChild(child, 'SIGTERM', RSPAMD_STOP_GRACE_MS);
        await redis.stop();
        await removeWork();
      },
    };
  } catch (error) {
    // One that never answered its ping is stopped before its run files go.
    if (spawned) await stopChild(spawned, 'SIGTERM');
    await redis.stop();
    await removeWork();
    throw error;
  }
}

/**
 * A Unix socket's path, or undefined when it is too long for a socket or holds a space (rspamd
 * reads options after one): then loopback TCP instead.
 */
function unixSocketFor(socketPath: string): string | undefined {
  return Buffer.byteLength(socketPath) <= MAX_SOCKET_PATH_BYTES && !/\s/.test(socketPath) ? socketPath : undefined;
}

/**
 * rspamd's configuration copy, pid file, logs and own counters. As root: under
 * /var/lib/contact-form-service (one per data directory, removed on stop), owned by `_rspamd`,
 * since root's home is 0700. Otherwise: in the data directory, or a temporary one.
 */
async function workingDirectory(dataDir: string | undefined): Promise<string> {
  const asRoot = process.getuid?.() === 0;
  const base = asRoot
    ? path.join(
        ROOT_POSTGRES_HOME,
        'rspamd',
        dataDir ? createHash('sha256').update(path.resolve(dataDir)).digest('hex').slice(0, 16) : `run-${process.pid}-${Date.now()}`,
      )
    : dataDir
      ? path.join(path.resolve(dataDir), 'rspamd')
      : await mkdtemp(path.join(tmpdir(), 'cfs-rspamd-'));
  if (asRoot) {
    await mkdir(path.join(ROOT_POSTGRES_HOME, 'rspamd'), { recursive: true });
    await chmod(ROOT_POSTGRES_HOME, 0o755);
    await chmod(path.join(ROOT_POSTGRES_HOME, 'rspamd'), 0o755);
  }
  // The configuration is copied on each start, so a changed rule takes effect.
  await rm(path.join(base, 'conf'), { recursive: true, force: true });
  for (const dir of ['conf', 'db', 'run', 'log']) await mkdir(path.join(base, dir), { recursive: true });
  await cp(RSPAMD_CONFIG_DIR, path.join(base, 'conf'), { recursive: true });
  if (asRoot) chownToRspamd(base, { recursive: true });
  return base;
}

/** The compiled rules' cache, shared by every instance on this machine (for this user). */
async function compiledRulesDirectory(): Promise<string> {
  const asRoot = process.getuid?.() === 0;
  const dir = asRoot
    ? path.join(ROOT_POSTGRES_HOME, 'rspamd', 'compiled-rules')
    : path.join(process.env.XDG_CACHE_HOME || path.join(homedir(), '.cache'), 'contact-form-service', 'rspamd-rules');
  await mkdir(dir, { recursive: true });
  if (asRoot) chownToRspamd(dir);
  return dir;
}

/** Hands a path to rspamd's user: as root, rspamd runs as `_rspamd`. */
function chownToRspamd(target: string, { recursive = false } = {}): void {
  const owned = spawnSync('chown', [...(recursive ? ['-R'] : []), '_rspamd:_rspamd', target], { encoding: 'utf8' });
  if (owned.status !== 0) throw new Error(spawnFailure('chown', owned));
}

// rspamd loads its rules and maps in seconds; on a machine busy with other work, that took over a minute.
async function waitForPing(url: string, child: ChildProcess, output: () => string, timeoutMs = 120_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`rspamd exited (${child.exitCode ?? child.signalCode}):\n${output()}`);
    const pong = await postOnce(new URL(url), '/ping', {}, Buffer.alloc(0), 1_000).then(
      (answer) => answer.status === 200,
      () => false,
    );
    if (pong) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`rspamd did not answer /ping at ${url} within ${timeoutMs} ms:\n${output()}`);
}
