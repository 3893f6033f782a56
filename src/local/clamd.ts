// A local clamd (ClamAV's scanning daemon, Debian's clamav-daemon package) for `npm start`, the
// tests and the benchmarks: a configuration file of its own (the package's /etc/clamav/clamd.conf
// names a system socket and the clamav user), its Unix socket in a directory of its own, the
// signature database read from the directory given. No `User` line: it runs as whoever starts it
// (root included), so it reads what that user reads and its socket is that user's alone.
import { type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { MAX_SOCKET_PATH_BYTES } from '../shared/infra/config-schema.ts';
import { ServiceStartError, spawnTracked, starting, stopChild, type LocalService } from './processes.ts';
import { findSystemTool, MissingToolError, requireSystemTool, type SystemTool } from './system-tools.ts';

/** Where Debian's freshclam keeps the official signature database. */
export const DEBIAN_DATABASE_DIR = '/var/lib/clamav';
/** How long clamd may take to stop on SIGTERM before its process group is killed. */
const CLAMD_STOP_GRACE_MS = 5_000;
/**
 * clamd loads its whole database before it answers: about a second for a few signatures, tens of
 * seconds for the official database (more on a busy machine).
 */
const CLAMD_START_TIMEOUT_MS = 180_000;

/** clamd, from Debian's clamav-daemon, whose install starts clamd and freshclam as system services: only our own instances are wanted. */
export const clamdTool = (neededFor: string): SystemTool => ({
  binary: 'clamd',
  package: 'clamav-daemon',
  neededFor,
  pathVariable: 'CLAMD_PATH',
  systemServices: ['clamav-daemon.socket', 'clamav-daemon', 'clamav-freshclam'],
});

/** Makes sure `clamd` exists, installing Debian's package when this is Debian or Ubuntu as root. */
export function ensureClamd(): string {
  try {
    return requireSystemTool(clamdTool('scanning uploaded files'));
  } catch (error) {
    if (error instanceof MissingToolError) throw new ServiceStartError('clamd', error.reason, error.remedy);
    throw error;
  }
}

/** clamd's path when it is installed; never installs it (`npm start` runs without scanning instead). */
export function findClamd(env: NodeJS.ProcessEnv = process.env): string | undefined {
  return findSystemTool(clamdTool('scanning uploaded files'), env);
}

/** The signature database a local clamd loads: CLAMD_DATABASE_DIR, or where Debian's freshclam keeps it. */
export function localDatabaseDir(env: NodeJS.ProcessEnv = process.env): string {
  return path.resolve(env.CLAMD_DATABASE_DIR || DEBIAN_DATABASE_DIR);
}

// What clamd loads from a database directory: the official databases (.cvd signed, .cld as
// freshclam's incremental updates leave them) and signatures of one's own (hashes, bodies, logical,
// phishing, YARA, bytecode). Allow lists alone (.fp, .ign2) detect nothing.
const DATABASE_FILE = /\.(cvd|cld|cud|hdb|hdu|hsb|hsu|mdb|mdu|msb|msu|ndb|ndu|ldb|ldu|cdb|idb|pdb|gdb|wdb|ftm|cbc|yar|yara)$/i;

/** Whether `dir` holds a signature database clamd can load (it refuses to start without one). */
export function hasSignatureDatabase(dir: string): boolean {
  try {
    return readdirSync(dir).some((name) => DATABASE_FILE.test(name));
  } catch {
    return false;
  }
}

export type ClamdOptions = {
  /** The signature database clamd loads (DatabaseDirectory); Debian's freshclam keeps it in /var/lib/clamav. */
  databaseDir?: string;
  /** Its configuration, temporary files and socket (kept; the same directory gives the same socket); unset: a temporary directory, removed on stop. */
  dir?: string;
};

export type ClamdService = LocalService & {
  /** Its Unix socket (mode 0600): CLAMD_SOCKET. `url` is the same path. */
  socket: string;
  child: ChildProcess;
};

/**
 * The limits clamd applies, stated rather than left to the defaults (which differ between
 * versions and distributions). StreamMaxLength bounds one INSTREAM: at least the most the service
 * streams per file (SCAN_MAX_BYTES, 10 MiB by default), with room for chunk framing. The others bound
 * what one such file may unpack to (archives, documents, embedded executables).
 */
export const CLAMD_LIMITS = {
  StreamMaxLength: '11M',
  MaxScanSize: '100M',
  MaxFileSize: '25M',
  MaxRecursion: '16',
  MaxFiles: '10000',
  MaxEmbeddedPE: '10M',
  MaxHTMLNormalize: '10M',
  MaxHTMLNoTags: '2M',
  MaxScriptNormalize: '5M',
  MaxZipTypeRcg: '1M',
  MaxPartitions: '50',
  MaxIconsPE: '100',
  // Milliseconds: below the service's own bound on a scan (CLAMD_TIMEOUT_MS, 30 s by default).
  MaxScanTime: '25000',
  // Scans at once: a worker scans the files of up to WORKER_CONCURRENCY messages at a time (each
  // message's one after another); the rest wait in clamd's queue.
  MaxThreads: '10',
} as const;

export async function startClamd(options: ClamdOptions = {}): Promise<ClamdService> {
  const binary = ensureClamd();
  const databaseDir = path.resolve(options.databaseDir ?? DEBIAN_DATABASE_DIR);
  const remedy = `read clamd's output above; clamd needs a signature database in ${databaseDir} (Debian: \`freshclam\`), or set CLAMD_SOCKET or CLAMD_HOST to a clamd of your own.`;
  const work = await starting('clamd', remedy, async () => {
    if (!options.dir) return mkdtemp(path.join(tmpdir(), 'cfs-clamd-'));
    const dir = path.resolve(options.dir);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    return dir;
  });
  let socketDir: string | undefined;
  const removeWork = async () => {
    if (!options.dir) await rm(work, { recursive: true, force: true });
    // A socket's own directory outside the working one holds nothing else.
    if (socketDir && socketDir !== work) await rm(socketDir, { recursive: true, force: true });
  };
  let spawned: ChildProcess | undefined;
  try {
    const socket = await starting('clamd', remedy, () => socketPath(work));
    socketDir = path.dirname(socket);
    const temporary = path.join(work, 'tmp');
    const config = path.join(work, 'clamd.conf');
    await starting('clamd', remedy, async () => {
      await mkdir(temporary, { recursive: true, mode: 0o700 });
      await writeFile(config, configuration(socket, databaseDir, temporary), { mode: 0o600 });
    });
    // clamd's worker threads are its own; the group is stopped as one all the same, like the other
    // servers (and a SIGSTOP for a test's "slow scanner" reaches all of it).
    const child = spawnTracked('SIGTERM', binary, ['--foreground', `--config-file=${config}`], { stdio: ['ignore', 'pipe', 'pipe'], ownGroup: true });
    spawned = child;
    let output = '';
    const keep = (chunk: Buffer) => void (output = (output + chunk.toString()).slice(-4_000));
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    await starting('clamd', remedy, () => waitForPong(socket, child, () => output));
    return {
      name: 'clamd',
      url: socket,
      socket,
      child,
      stop: async () => {
        await stopChild(child, 'SIGTERM', CLAMD_STOP_GRACE_MS);
        await removeWork();
      },
    };
  } catch (error) {
    if (spawned) await stopChild(spawned, 'SIGTERM', CLAMD_STOP_GRACE_MS);
    await removeWork();
    throw error;
  }
}

function configuration(socket: string, databaseDir: string, temporary: string): string {
  const settings: Array<[string, string]> = [
    ['LocalSocket', socket],
    ['LocalSocketMode', '600'],
    // A socket left by a clamd that was killed is removed; one in use makes the start fail.
    ['FixStaleSocket', 'yes'],
    ['DatabaseDirectory', databaseDir],
    // Where a stream is written while it is scanned: the system's /tmp may be shared or small.
    ['TemporaryDirectory', temporary],
    ['Foreground', 'yes'],
    // Errors go to its output, kept for the message when it does not start.
    ['LogSyslog', 'no'],
    // Reloads the database when freshclam changes it.
    ['SelfCheck', '600'],
    ...Object.entries(CLAMD_LIMITS),
  ];
  return `# Written by contact-form-service on each start of its local clamd.\n${settings.map(([name, value]) => `${name} ${value}`).join('\n')}\n`;
}

/**
 * The socket in clamd's directory when its path fits a Unix socket's; otherwise in a directory of
 * this user's under the system's temporary directory, named after the working directory so that a
 * restart finds the same path.
 */
async function socketPath(work: string): Promise<string> {
  const inWork = path.join(work, 'clamd.sock');
  if (Buffer.byteLength(inWork) <= MAX_SOCKET_PATH_BYTES) return inWork;
  const base = Buffer.byteLength(tmpdir()) <= 60 ? tmpdir() : '/tmp';
  const short = path.join(base, `cfs-clamd-${createHash('sha256').update(work).digest('hex').slice(0, 16)}`);
  await mkdir(short, { recursive: true, mode: 0o700 });
  await chmod(short, 0o700);
  return path.join(short, 'clamd.sock');
}

/** Sends one command (`zPING\0`, `zVERSION\0`) on clamd's socket: its answer without the terminating NUL. */
export function clamdCommand(socket: string, command: string, timeoutMs = 2_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const connection = createConnection(socket);
    let answer = '';
    connection.setTimeout(timeoutMs, () => connection.destroy(new Error(`no answer to ${command} within ${timeoutMs} ms`)));
    connection.on('connect', () => connection.write(`z${command}\0`));
    // A z-command's answer ends with a NUL; clamd closes the connection after it.
    connection.on('data', (chunk: Buffer) => {
      answer += chunk.toString();
      if (answer.endsWith('\0')) connection.end();
    });
    connection.on('error', reject);
    connection.on('close', () =>
      answer.endsWith('\0') ? resolve(answer.slice(0, -1)) : reject(new Error(`clamd closed the connection without an answer to ${command}`)),
    );
  });
}

async function waitForPong(socket: string, child: ChildProcess, output: () => string, timeoutMs = CLAMD_START_TIMEOUT_MS): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`clamd exited (${child.exitCode ?? child.signalCode}):\n${output().trim()}`);
    const pong =
      existsSync(socket) &&
      (await clamdCommand(socket, 'PING').then(
        (answer) => answer === 'PONG',
        () => false,
      ));
    if (pong) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`clamd did not answer PING on ${socket} within ${timeoutMs} ms:\n${output().trim()}`);
}
