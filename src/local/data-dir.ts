// What `npm start` keeps in DATA_DIR, and how `npm run backup` and `npm run restore` reach it: the
// server secret, the PostgreSQL cluster (the one npm start runs, or one started here for the while)
// and the S3 server's files (through an S3 server of our own on the same directory).
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { LOCAL_S3_CREDENTIALS, startPostgres, startS3, type LocalService } from './services.ts';

/** The database npm start creates in its cluster. */
export const LOCAL_DATABASE = 'contact_form';

export const localPaths = (dataDir: string) => ({
  secret: path.join(dataDir, 'secret'),
  postgres: path.join(dataDir, 'postgres'),
  s3: path.join(dataDir, 's3'),
});

/**
 * The PostgreSQL server running on this data directory (under npm start), read from the lock file
 * PostgreSQL keeps in its cluster: its PID, and the port and address it listens on.
 */
export function runningPostgres(dataDir: string): { pid: number; url: string } | undefined {
  let lines: string[];
  try {
    lines = readFileSync(path.join(localPaths(dataDir).postgres, 'postmaster.pid'), 'utf8').split('\n');
  } catch {
    return undefined;
  }
  const pid = Number(lines[0]);
  // Left behind by a server that was killed: PostgreSQL itself ignores it then.
  if (!Number.isInteger(pid) || pid <= 0 || !isRunning(pid)) return undefined;
  const port = Number(lines[3]);
  const address = (lines[5] ?? '').split(/\s+/)[0] || '127.0.0.1';
  return { pid, url: `postgres://postgres:postgres@${address === '*' ? '127.0.0.1' : address}:${port}/${LOCAL_DATABASE}` };
}

/** Whether a process with this PID exists (EPERM: it does, under another user). */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export const hasCluster = (dataDir: string) => existsSync(path.join(localPaths(dataDir).postgres, 'PG_VERSION'));

/** The data directory's PostgreSQL, started here (a new cluster when it has none); stopped by `stop`. */
export function startLocalPostgres(dataDir: string): Promise<LocalService> {
  return startPostgres({ dir: localPaths(dataDir).postgres, persistent: true, database: LOCAL_DATABASE });
}

/**
 * An S3 server of our own on the data directory's S3 files, the bucket created if missing: the
 * files are read and written through the S3 API, so s3rver keeps its own layout and metadata.
 */
export async function startLocalS3(dataDir: string, bucket: string): Promise<LocalService & { credentials: typeof LOCAL_S3_CREDENTIALS }> {
  const s3 = await startS3({ dir: localPaths(dataDir).s3, bucket });
  return { ...s3, credentials: LOCAL_S3_CREDENTIALS };
}
