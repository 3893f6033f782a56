// `npm run backup [-- FILE]`: one archive of everything needed to bring the service back: the
// database (read in one snapshot, so the service may go on running), the stored files it names, and
// SECRET. Works on npm start's DATA_DIR (running or stopped) and on external PostgreSQL and S3.
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Transform, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import pg from 'pg';
import { LONG_OPERATION_TIMEOUTS, pgTimeoutOptions } from '../shared/infra/db/pg-pool.ts';
import * as tar from 'tar';
import { appliedMigrations, copyTableOut, listTables, readInSnapshot, storedObjects, type StoredObject } from '../shared/infra/db/table-copy.ts';
import {
  ARCHIVE_FORMAT,
  ARCHIVE_VERSION,
  digestFile,
  localDataDir,
  MANIFEST,
  openStorage,
  plural,
  readSettings,
  runTool,
  SECRET_ENTRY,
  userPath,
  UserError,
  type Digest,
  type Manifest,
  type Settings,
} from './archive.ts';

const USAGE = `Usage: npm run backup [-- FILE]
  Writes one archive (.tar.gz) of the database, the stored files and SECRET to FILE
  (default: contact-form-backup-<date>-<time>.tar.gz in the current directory; - for stdout).`;

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  if (args.some((arg) => arg === '-h' || arg === '--help')) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (args.length > 1 || (args[0]?.startsWith('-') && args[0] !== '-')) {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  const settings = readSettings();
  const toStdout = args[0] === '-';
  const output = toStdout
    ? undefined
    : userPath(args[0] ?? `contact-form-backup-${new Date().toISOString().slice(0, 19).replace(/[-:]/g, '').replace('T', '-')}.tar.gz`);
  // The summary goes where it does not mix with the archive.
  const say = (line: string) => (toStdout ? process.stderr : process.stdout).write(`${line}\n`);

  if (!settings.DATABASE_URL) await requireLocalData(settings);
  const secret = await readSecret(settings);
  const stops: Array<() => Promise<void>> = [];
  // Staged beside the archive, where its space is: the tables and files, then packed.
  const stagingParent = output ? path.dirname(output) : tmpdir();
  const staging = await mkdtemp(path.join(stagingParent, '.contact-form-backup-')).catch((error: unknown) => {
    throw new UserError(`Cannot write in ${stagingParent} (${(error as Error).message}): name a file in a directory you can write to.`);
  });
  let destination: Writable | undefined;
  try {
    destination = toStdout ? process.stdout : await createArchiveFile(output!);
    const database = await openDatabase(settings, stops);
    say(`Reading the database (${database.where})…`);
    const manifest: Manifest = { format: ARCHIVE_FORMAT, version: ARCHIVE_VERSION, createdAt: '', migrations: [], tables: [], files: [] };
    const objects = await dumpDatabase(database.url, staging, manifest);

    await mkdir(path.join(staging, 'files'));
    if (objects.length) {
      const storage = await openStorage(settings);
      stops.push(storage.stop);
      say(`Reading ${plural(objects.length, 'stored file')} (${storage.where})…`);
      for (const [index, object] of objects.entries()) {
        const file = `files/${String(index + 1).padStart(6, '0')}`;
        const copied = await copyObject(storage.storage.download, object, path.join(staging, file));
        if (copied) manifest.files.push({ ...object, ...copied, file });
      }
    }

    await writeFile(path.join(staging, SECRET_ENTRY), `${secret}\n`, { mode: 0o600 });
    await writeFile(path.join(staging, MANIFEST), `${JSON.stringify(manifest, null, 2)}\n`);
    await pipeline(tar.c({ gzip: true, cwd: staging, portable: true }, [MANIFEST, SECRET_ENTRY, 'database', 'files']), destination);
  } catch (error) {
    if (output && destination) await rm(output, { force: true });
    throw error;
  } finally {
    await rm(staging, { recursive: true, force: true });
    for (const stop of stops.reverse()) await stop();
  }

  say(`Wrote ${output ?? 'the archive to stdout'}.`);
  process.stderr.write(
    'Warning: the archive holds SECRET, which unlocks every key, webhook secret and link in it. ' +
      `Keep it as safe as the secret itself${output ? ' (the file is readable by you only)' : ''}.\n`,
  );
  return 0;
}

/** DATA_DIR must hold npm start's database: a mistyped DATA_DIR is named as such. */
async function requireLocalData(settings: Settings): Promise<void> {
  const { hasCluster, localPaths } = await localDataDir();
  if (hasCluster(settings.dataDir)) return;
  throw new UserError(
    `Nothing to back up: ${settings.dataDir} has no database (${localPaths(settings.dataDir).postgres}).\n` +
      'Set DATA_DIR to the directory npm start uses, or DATABASE_URL (and S3_ENDPOINT, SECRET) for external services.',
  );
}

/** SECRET when set, else the one npm start keeps in DATA_DIR. */
async function readSecret(settings: Settings): Promise<string> {
  if (settings.SECRET) return settings.SECRET;
  const { localPaths } = await localDataDir();
  const file = localPaths(settings.dataDir).secret;
  const secret = (await readFile(file, 'utf8').catch(() => '')).trim();
  if (!secret) {
    throw new UserError(
      `No SECRET to back up: it is not set, and ${file} does not exist.\n` +
        'Set SECRET as the service runs with it, or DATA_DIR to the directory npm start uses.',
    );
  }
  return secret;
}

/** Created readable by its owner only, since it holds the secret; never over an existing file. */
async function createArchiveFile(file: string): Promise<Writable> {
  const stream = createWriteStream(file, { flags: 'wx', mode: 0o600 });
  await new Promise<void>((resolve, reject) => {
    stream.once('open', () => resolve());
    stream.once('error', (error: NodeJS.ErrnoException) =>
      reject(error.code === 'EEXIST' ? new UserError(`${file} already exists: name another file, or move it away.`) : error),
    );
  });
  return stream;
}

/** DATABASE_URL, or npm start's PostgreSQL: the running one, else started here on DATA_DIR's cluster. */
async function openDatabase(settings: Settings, stops: Array<() => Promise<void>>): Promise<{ url: string; where: string }> {
  if (settings.DATABASE_URL) return { url: settings.DATABASE_URL, where: 'DATABASE_URL' };
  const { localPaths, runningPostgres, startLocalPostgres } = await localDataDir();
  const where = localPaths(settings.dataDir).postgres;
  const running = runningPostgres(settings.dataDir);
  if (running) return { url: running.url, where: `${where}, running` };
  const postgres = await startLocalPostgres(settings.dataDir);
  stops.push(postgres.stop);
  return { url: postgres.url, where };
}

/** Every table in one snapshot, into staging/database; returns the stored files the snapshot names. */
async function dumpDatabase(url: string, staging: string, manifest: Manifest): Promise<StoredObject[]> {
  const client = new pg.Client({ connectionString: url, application_name: 'contact-form backup', ...pgTimeoutOptions(LONG_OPERATION_TIMEOUTS) });
  await client.connect();
  try {
    return await readInSnapshot(client, async () => {
      manifest.createdAt = new Date().toISOString();
      manifest.migrations = await appliedMigrations(client);
      if (!manifest.migrations.length) throw new UserError('The database has no migrations applied: it holds nothing of the service.');
      await mkdir(path.join(staging, 'database'));
      for (const [index, table] of (await listTables(client)).entries()) {
        const file = `database/${String(index + 1).padStart(2, '0')}-${table.name}.copy`;
        const rows = await copyTableOut(client, table, createWriteStream(path.join(staging, file)));
        manifest.tables.push({ ...table, rows, file, ...(await digestFile(path.join(staging, file))) });
      }
      return storedObjects(client);
    });
  } finally {
    await client.end();
  }
}

/**
 * Copies one stored file, checking it against the size and SHA-256 its row recorded; returns those
 * of the bytes copied, which restore checks. A file gone since the snapshot (its submission deleted
 * meanwhile) is left out with a warning.
 */
async function copyObject(download: (key: string) => Promise<NodeJS.ReadableStream>, object: StoredObject, file: string): Promise<Digest | undefined> {
  let body: NodeJS.ReadableStream;
  try {
    body = await download(object.key);
  } catch (error) {
    if ((error as Error).name !== 'NoSuchKey') throw error;
    process.stderr.write(`Warning: the stored file ${object.key} is missing from the bucket; the archive has its row only.\n`);
    return undefined;
  }
  const hash = createHash('sha256');
  let size = 0;
  const measure = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      hash.update(chunk);
      size += chunk.length;
      callback(null, chunk);
    },
  });
  await pipeline(body, measure, createWriteStream(file, { mode: 0o600 }));
  const sha256 = hash.digest('hex');
  if (sha256 !== object.sha256 || size !== object.size) {
    process.stderr.write(`Warning: the stored file ${object.key} differs from what its row recorded (${size} bytes, SHA-256 ${sha256}); archived as it is.\n`);
  }
  return { size, sha256 };
}

runTool(main);
