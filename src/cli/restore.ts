// `npm run restore -- ARCHIVE [--overwrite]`: puts an archive of `npm run backup` back into a
// stopped or fresh DATA_DIR (npm start), or into external PostgreSQL and S3. The schema is built by
// the project's own migrations, up to the ones the archive's database had; the rows are loaded in one
// transaction, after the files. Refuses a target that holds data (unless --overwrite) or that the
// service is using.
import { createReadStream, rmSync } from 'node:fs';
import { lstat, mkdir, mkdtemp, readdir, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import pg from 'pg';
import { LONG_OPERATION_TIMEOUTS, pgTimeoutOptions } from '../shared/infra/db/pg-pool.ts';
import * as tar from 'tar';
import { createOrm, MIGRATIONS_PATH } from '../shared/infra/db/orm.ts';
import { entities } from '../shared/schema.ts';
import {
  advanceSequences,
  appliedMigrations,
  copyTableIn,
  dropSchemaObjects,
  listTables,
  otherSessions,
  tablesWithRows,
} from '../shared/infra/db/table-copy.ts';
import { inClientTransaction } from '../shared/infra/db/transactions.ts';
import type { Storage } from '../shared/infra/storage.ts';
import {
  ARCHIVE_FORMAT,
  digestFile,
  localDataDir,
  MANIFEST,
  openStorage,
  plural,
  READABLE_VERSIONS,
  readSettings,
  runTool,
  SECRET_ENTRY,
  userPath,
  UserError,
  type Manifest,
  type Settings,
} from './archive.ts';

const USAGE = `Usage: npm run restore -- ARCHIVE [--overwrite]
  Puts an archive of npm run backup back (ARCHIVE - reads it from stdin). Without DATABASE_URL it
  restores into DATA_DIR for npm start, which must not be running. --overwrite replaces the data
  the target already holds.`;

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  if (args.some((arg) => arg === '-h' || arg === '--help')) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  // `npm run restore ARCHIVE --overwrite` (without `--`) hands the flag to npm, which passes it on as this.
  const overwrite = args.includes('--overwrite') || process.env.npm_config_overwrite === 'true';
  const rest = args.filter((arg) => arg !== '--overwrite');
  if (rest.length !== 1 || (rest[0]!.startsWith('-') && rest[0] !== '-')) {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  const settings = readSettings();
  const archive = rest[0] === '-' ? undefined : userPath(rest[0]!);

  // Holds a copy of SECRET and of every row: removed however the restore ends, Ctrl+C included.
  const staging = await realpath(await mkdtemp(path.join(tmpdir(), 'contact-form-restore-')));
  const removeOnSignal = (signal: NodeJS.Signals) => {
    rmSync(staging, { recursive: true, force: true });
    process.exit(128 + (signal === 'SIGINT' ? 2 : 15));
  };
  process.once('SIGINT', removeOnSignal).once('SIGTERM', removeOnSignal);
  const stops: Array<() => Promise<void>> = [];
  try {
    const manifest = await unpack(archive, staging);
    await checkEntries(staging, manifest);
    const secret = (await readFile(await stagedFile(staging, SECRET_ENTRY, 'the secret'), 'utf8')).trim();
    if (settings.SECRET && settings.SECRET !== secret) {
      throw new UserError(
        'SECRET is set, and is not the secret of the archive: the restored keys would not work under it.\n' +
          `Unset SECRET${settings.DATABASE_URL ? '' : ' (npm start then uses DATA_DIR/secret, which restore writes)'}, or set it to the archive's: ` +
          `tar -xzOf ${archive ?? 'ARCHIVE'} secret`,
      );
    }

    const database = await openDatabase(settings, stops);
    const storage = await openStorage(settings);
    stops.push(storage.stop);
    await restoreInto(database.url, storage.storage, manifest, staging, overwrite, database.remedy);

    let next: string;
    if (!settings.DATABASE_URL && !settings.SECRET) {
      const { localPaths } = await localDataDir();
      await mkdir(settings.dataDir, { recursive: true });
      await writeFile(localPaths(settings.dataDir).secret, `${secret}\n`, { mode: 0o600 });
      next = 'Next: npm start. It applies the newer migrations; emails and webhooks that were waiting go out within a minute.';
    } else {
      next =
        'Next: npm run migrate with the version you will run, then start the workers and the API, with SECRET set to the ' +
        `archive's (tar -xzOf ${archive ?? 'ARCHIVE'} secret). Emails and webhooks that were waiting go out within a minute.`;
    }
    const rows = manifest.tables.reduce((sum, table) => sum + table.rows, 0);
    process.stdout.write(
      `Restored ${plural(rows, 'row')} in ${plural(manifest.tables.length, 'table')} (${database.where}) and ` +
        `${plural(manifest.files.length, 'file')} (${storage.where}) from the backup of ${manifest.createdAt}.\n${next}\n`,
    );
    return 0;
  } finally {
    try {
      for (const stop of stops.reverse()) await stop();
    } finally {
      await rm(staging, { recursive: true, force: true });
      process.off('SIGINT', removeOnSignal).off('SIGTERM', removeOnSignal);
    }
  }
}

async function unpack(archive: string | undefined, staging: string): Promise<Manifest> {
  const notAnArchive = (cause: string) =>
    new UserError(`${archive ?? 'stdin'} is not an archive of npm run backup (${cause}). Give the file npm run backup wrote.`);
  try {
    await pipeline(archive ? createReadStream(archive) : process.stdin, tar.x({ cwd: staging, strict: true }));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' && archive) throw new UserError(`${archive} does not exist.`);
    throw notAnArchive((error as Error).message);
  }
  // What the file says, before its format and version are checked.
  let manifest: Omit<Manifest, 'format' | 'version'> & { format: unknown; version: unknown };
  try {
    manifest = JSON.parse(await readFile(await stagedFile(staging, MANIFEST, 'the manifest'), 'utf8')) as typeof manifest;
  } catch (error) {
    if (error instanceof UserError) throw error;
    throw notAnArchive(`no readable ${MANIFEST}`);
  }
  if (manifest.format !== ARCHIVE_FORMAT || !Array.isArray(manifest.tables) || !Array.isArray(manifest.files)) {
    throw notAnArchive(`its ${MANIFEST} is not ours`);
  }
  if (typeof manifest.version !== 'number' || !READABLE_VERSIONS.includes(manifest.version)) {
    throw new UserError(
      `The archive is of format version ${String(manifest.version)}; this version of the service reads ${READABLE_VERSIONS.join(' and ')}. Restore it with the version that wrote it.`,
    );
  }
  return manifest as Manifest;
}

/**
 * Every file the manifest names must be a regular file inside the staging directory with the size
 * and SHA-256 the manifest records, before anything is changed: a crafted archive could otherwise
 * name ../../etc/shadow, or hold a symbolic link, and have what it points at uploaded or loaded.
 */
async function checkEntries(staging: string, manifest: Manifest): Promise<void> {
  const entries = [
    ...manifest.tables.map((table) => ({ what: `the table ${table.name}`, ...table })),
    ...manifest.files.map((file) => ({ what: `the stored file ${file.key}`, ...file })),
  ];
  for (const entry of entries) {
    const file = await stagedFile(staging, entry.file, entry.what);
    // Only the tables of a version 1 archive have none; their row counts are still checked on loading.
    if (entry.sha256 === undefined && manifest.version === 1 && 'rows' in entry) continue;
    const found = await digestFile(file);
    if (found.size !== entry.size || found.sha256 !== entry.sha256) {
      throw new UserError(
        `The archive is damaged or was altered: ${entry.what} (${entry.file}) has ${plural(found.size, 'byte')}, SHA-256 ${found.sha256}; ` +
          `its manifest says ${plural(Number(entry.size), 'byte')}, SHA-256 ${String(entry.sha256)}.\nNothing was changed.`,
      );
    }
  }
  if (manifest.version === 1) {
    process.stderr.write('Note: the archive is of format version 1, which records no checksums of its tables: their row counts are checked instead.\n');
  }
}

/** The path of a file the archive holds: a regular file inside the staging directory, not through a link. */
async function stagedFile(staging: string, name: unknown, what: string): Promise<string> {
  const refuse = (why: string) => new UserError(`The archive cannot be restored: ${what} ${why}.\nNothing was changed.`);
  if (typeof name !== 'string' || !name) throw refuse('has no file name');
  const file = path.resolve(staging, name);
  if (!file.startsWith(staging + path.sep)) throw refuse(`is named ${JSON.stringify(name)}, outside the archive`);
  const stats = await lstat(file).catch(() => undefined);
  if (!stats) throw refuse(`(${name}) is missing from the archive`);
  if (stats.isSymbolicLink()) throw refuse(`(${name}) is a symbolic link, not a file`);
  if (!stats.isFile()) throw refuse(`(${name}) is not a regular file`);
  // A directory above it that is a link would lead outside all the same.
  if ((await realpath(file)) !== file) throw refuse(`(${name}) lies under a symbolic link`);
  return file;
}

/** DATABASE_URL, or npm start's PostgreSQL on DATA_DIR, started here: never while npm start runs it. */
async function openDatabase(settings: Settings, stops: Array<() => Promise<void>>): Promise<{ url: string; where: string; remedy: string }> {
  if (settings.DATABASE_URL) {
    return {
      url: settings.DATABASE_URL,
      where: 'DATABASE_URL',
      remedy: 'give an empty database in DATABASE_URL (createdb), or add --overwrite to replace what it holds',
    };
  }
  const { localPaths, runningPostgres, startLocalPostgres } = await localDataDir();
  const running = runningPostgres(settings.dataDir);
  if (running) {
    throw new UserError(
      `The service is running on ${settings.dataDir} (its PostgreSQL has PID ${running.pid}).\n` + 'Stop npm start (Ctrl+C) and run the restore again.',
    );
  }
  const postgres = await startLocalPostgres(settings.dataDir);
  stops.push(postgres.stop);
  return {
    url: postgres.url,
    where: localPaths(settings.dataDir).postgres,
    remedy: `restore into a fresh directory (DATA_DIR=/some/new/dir npm run restore -- ARCHIVE, then npm start with the same DATA_DIR), or add --overwrite to replace what ${settings.dataDir} holds`,
  };
}

async function restoreInto(url: string, storage: Storage, manifest: Manifest, staging: string, overwrite: boolean, remedy: string): Promise<void> {
  await checkMigrations(manifest.migrations);
  const client = new pg.Client({ connectionString: url, application_name: 'contact-form restore', ...pgTimeoutOptions(LONG_OPERATION_TIMEOUTS) });
  await client.connect();
  try {
    const sessions = await otherSessions(client);
    if (sessions && !overwrite) {
      throw new UserError(
        `${plural(sessions, 'other session')} use the database: the API, the workers or the bounce receiver may still run.\n` +
          'Stop them and run the restore again (--overwrite restores all the same).',
      );
    }
    const target = await listTables(client);
    const held = (await tablesWithRows(client, target)).map(
      (table) => `${table.name} (${table.rows >= 1000 ? '1000 or more rows' : plural(table.rows, 'row')})`,
    );
    const objects = await objectKeys(storage, 1000);
    if (objects.length) held.push(`${objects.length >= 1000 ? '1000 or more' : objects.length} stored files`);
    if (held.length && !overwrite) {
      throw new UserError(`The target already holds data: ${held.join(', ')}.\nNothing was changed. To go on, ${remedy}.`);
    }

    // A schema made by other migrations than the archive's first ones is built again from nothing.
    const applied = await appliedMigrations(client);
    const onTheWay = applied.length > 0 && applied.every((name, index) => manifest.migrations[index] === name);
    if (target.length && (held.length || !onTheWay)) await dropSchemaObjects(client);
    await migrateTo(url, manifest.migrations);
    const tables = await listTables(client);
    const unknown = manifest.tables.filter((table) => !tables.some((known) => known.name === table.name));
    if (unknown.length) throw new Error(`the migrations made no table ${unknown.map((table) => table.name).join(', ')}`);

    if (objects.length) await removeAll(storage);
    const uploaded: string[] = [];
    try {
      for (const file of manifest.files) {
        await storage.upload(file.key, createReadStream(path.resolve(staging, file.file)), file.contentType);
        uploaded.push(file.key);
      }
      await inClientTransaction(client, async () => {
        for (const table of tables) {
          const saved = manifest.tables.find((entry) => entry.name === table.name);
          if (!saved) continue;
          const rows = await copyTableIn(client, saved, createReadStream(path.resolve(staging, saved.file)));
          if (rows !== saved.rows) throw new Error(`${saved.name}: loaded ${rows} rows, the archive has ${saved.rows}`);
        }
        await advanceSequences(client);
      });
    } catch (error) {
      // No row names them: they would only stand in the way of the next attempt.
      if (uploaded.length) await storage.remove(uploaded).catch(() => undefined);
      throw error;
    }
  } finally {
    await client.end();
  }
}

/** The archive's migrations must be this version's first ones, in order: else it is a newer version's. */
async function checkMigrations(migrations: string[]): Promise<void> {
  const known = (await readdir(MIGRATIONS_PATH))
    .filter((file) => /^Migration.*\.ts$/.test(file))
    .map((file) => file.replace(/\.ts$/, ''))
    .sort();
  const missing = migrations.find((name, index) => known[index] !== name);
  if (missing) {
    throw new UserError(
      `The archive's database had the migration ${missing}, which this version of the service does not have in that place.\n` +
        'Nothing was changed. Restore it with the version that wrote it (or a newer one).',
    );
  }
}

/** Applies the project's migrations up to the archive's last one (the rest: npm start or npm run migrate). */
async function migrateTo(url: string, migrations: string[]): Promise<void> {
  const orm = await createOrm(url, entities, 2);
  try {
    const executed = await orm.migrator.getExecuted();
    if (migrations.length > executed.length) await orm.migrator.up({ to: migrations[migrations.length - 1]! });
  } finally {
    await orm.close();
  }
}

async function objectKeys(storage: Storage, limit: number): Promise<string[]> {
  const listed = await storage.client.send(new ListObjectsV2Command({ Bucket: storage.bucket, MaxKeys: limit })).catch((error: unknown) => {
    if ((error as Error).name !== 'NoSuchBucket') throw error;
    throw new UserError(`The bucket ${storage.bucket} does not exist: create it (the service never does), then run the restore again.`);
  });
  return (listed.Contents ?? []).map((object) => object.Key!);
}

async function removeAll(storage: Storage): Promise<void> {
  for (let keys = await objectKeys(storage, 1000); keys.length; keys = await objectKeys(storage, 1000)) await storage.remove(keys);
}

runTool(main);
