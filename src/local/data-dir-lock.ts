// One `npm start` per data directory. A start writes its PID to DATA_DIR/npm-start.pid, created
// exclusively; a second start finds it and says which start uses the directory, instead of
// reaching PostgreSQL's own lock and an error that reads like damaged data. A lock left by a
// start that crashed is taken over, as PostgreSQL does with its postmaster.pid: when its PID is no
// longer running, or now belongs to a program that is neither an npm start nor PostgreSQL.
import { closeSync, mkdirSync, openSync, readFileSync, rmdirSync, rmSync, unlinkSync, writeSync } from 'node:fs';
import path from 'node:path';
import { isRunning, localPaths } from './data-dir.ts';

export const LOCK_FILE = 'npm-start.pid';

/** Another start, or its PostgreSQL, uses the data directory: one line that says so. */
export class DataDirInUseError extends Error {
  override name = 'DataDirInUseError';
}

const isNpmStart = (pid: number) => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('src/local/start.ts');
  } catch {
    return false;
  }
};
const processName = (pid: number) => {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return '';
  }
};

/** The PID a lock file names, when it is a running process that `holds` says may hold it. */
function liveHolder(file: string, holds: (pid: number) => boolean): number | undefined {
  let pid: number;
  try {
    pid = Number(readFileSync(file, 'utf8').split('\n')[0]);
  } catch {
    return undefined;
  }
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return undefined;
  return isRunning(pid) && holds(pid) ? pid : undefined;
}

/**
 * Takes the data directory for this start, released when the process exits. Throws
 * DataDirInUseError when another start, or a PostgreSQL it left running, uses it.
 */
export function lockDataDir(dataDir: string): void {
  // The first directory this start created, if any: removed again at exit while still empty, so a
  // start refused after this point leaves no empty DATA_DIR behind.
  const created = mkdirSync(dataDir, { recursive: true });
  const file = path.join(dataDir, LOCK_FILE);
  for (let attempt = 0; ; attempt += 1) {
    try {
      const fd = openSync(file, 'wx', 0o644);
      writeSync(fd, `${process.pid}\n`);
      closeSync(fd);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 0) throw error;
      const holder = liveHolder(file, isNpmStart);
      if (holder)
        throw new DataDirInUseError(`another start (PID ${holder}) is using DATA_DIR ${dataDir}; stop it first (Ctrl+C in its terminal, or kill ${holder}).`);
      rmSync(file, { force: true }); // left by a start that ended without cleaning up
    }
  }
  process.on('exit', () => {
    try {
      if (readFileSync(file, 'utf8').trim() === String(process.pid)) unlinkSync(file);
    } catch {
      // already gone
    }
    if (created) removeEmptyUpTo(dataDir, created);
  });

  // A PostgreSQL left running on this cluster by a start that was killed: PostgreSQL would refuse
  // to start with "lock file already exists"; say what it is instead. A postmaster.pid whose PID is
  // gone is stale and PostgreSQL starts over it by itself; one whose PID now belongs to another
  // program (reused after a reboot or in a container) PostgreSQL would refuse, so it is removed
  // here: this start holds the data directory, no other PostgreSQL of ours can be using it.
  const postmaster = path.join(localPaths(dataDir).postgres, 'postmaster.pid');
  const postgres = liveHolder(postmaster, (pid) => processName(pid) === 'postgres');
  if (postgres) {
    throw new DataDirInUseError(
      `a PostgreSQL server (PID ${postgres}) left by an earlier start is still using DATA_DIR ${dataDir}; stop it first (kill -INT ${postgres}). The data is intact.`,
    );
  }
  if (liveHolder(postmaster, () => true)) rmSync(postmaster, { force: true });
}

/** Removes `dir` and its parents up to `top`, each only while empty. */
function removeEmptyUpTo(dir: string, top: string): void {
  for (let current = dir; ; current = path.dirname(current)) {
    try {
      rmdirSync(current);
    } catch {
      return; // not empty: the start wrote something there
    }
    if (current === top || path.dirname(current) === current) return;
  }
}
