// npm run backup and npm run restore, as a user runs them: a running service with a key, files and
// emails still waiting (the SMTP server refuses them) is backed up, the data goes, it is restored,
// and the service started again has every submission, file and key, and delivers what was waiting.
// First through npm start and its DATA_DIR (backed up running and stopped, through a file and
// through stdout), then against external PostgreSQL and S3.
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { lstatSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readlink, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CreateBucketCommand, DeleteBucketCommand, GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import pg from 'pg';
import * as tar from 'tar';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi } from '../../src/api/server.ts';
import { freePort, LOCAL_S3_CREDENTIALS } from '../../src/local/services.ts';
import { loadConfig } from '../../src/shared/infra/config.ts';
import { createLogger } from '../../src/shared/infra/log.ts';
import { createStorage } from '../../src/shared/infra/storage.ts';
import { startWorker } from '../../src/workers/worker.ts';
import { submitJson, submitMultipart } from '../support/client.ts';
import { deleteQueueKeys, eventually, listObjectKeys, postJson, startHarness, testDatabase, type Harness } from '../support/harness.ts';
import { descendants, NPM_START_BANNER_WAIT_MS, npmStartTestTimeout, processTracker } from '../support/processes.ts';
import { startSmtpSink, type ReceivedMail, type SmtpSink } from '../support/smtp-sink.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const log = createLogger('test', process.env.TEST_LOG_LEVEL ?? 'silent');
const refuseEverything = () => ({ code: 451, message: '4.3.0 Try again later' });

const { spawned, startedPids, killAll: killSpawned } = processTracker();

type Run = { code: number | null; output: string };

/** `npm run <script> -- args` in the project, as a user types it; never blocks this process (the SMTP sink runs here). */
function npmRun(script: string, args: string[], env: NodeJS.ProcessEnv): Promise<Run> {
  return collect(spawn('npm', ['run', '--silent', script, '--', ...args], { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] }));
}

/** A command line as a user pastes it, run by sh in the project. */
function shell(command: string, env: NodeJS.ProcessEnv): Promise<Run> {
  return collect(spawn('sh', ['-c', command], { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] }));
}

function collect(child: ChildProcess): Promise<Run> {
  spawned.push(child);
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, output })));
}

/** This test run's environment without the services it set: the tools must find npm start's own. */
function localEnv(dataDir: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, LOG_LEVEL: 'warn', ...extra };
  for (const name of [
    'DATABASE_URL',
    'REDIS_URL',
    'S3_ENDPOINT',
    'S3_BUCKET',
    'S3_ACCESS_KEY_ID',
    'S3_SECRET_ACCESS_KEY',
    'SMTP_URL',
    'PUBLIC_URL',
    'SECRET',
  ]) {
    if (!(name in extra)) delete env[name];
  }
  return env;
}

async function query<T extends pg.QueryResultRow>(url: string, text: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(text, values)).rows;
  } finally {
    await client.end();
  }
}

type Running = { child: ChildProcess; banner: Record<string, string> };

async function npmStart(env: NodeJS.ProcessEnv): Promise<Running> {
  const child = spawn('npm', ['start'], { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  spawned.push(child);
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  await eventually(
    async () => {
      if (child.exitCode !== null) throw new Error(`npm start exited with ${child.exitCode}:\n${output}`);
      return output.includes('Press Ctrl+C to stop.') ? true : undefined;
    },
    NPM_START_BANNER_WAIT_MS,
    `npm start banner:\n${output}`,
  );
  startedPids.push(...descendants(child.pid!));
  const banner = Object.fromEntries([...output.matchAll(/^ {2}(API|PostgreSQL|S3)\s+(\S.*)$/gm)].map((match) => [match[1]!, match[2]!]));
  return { child, banner };
}

async function stop(running: Running): Promise<void> {
  const exited = new Promise<number | null>((resolve) => running.child.once('exit', resolve));
  running.child.kill('SIGTERM');
  expect(await exited).toBe(0);
}

/** Removes a data directory and, as root, the cluster its `postgres` link points at. */
async function removeDataDir(dataDir: string): Promise<void> {
  const link = path.join(dataDir, 'postgres');
  if (lstatSync(link, { throwIfNoEntry: false })?.isSymbolicLink()) await rm(await readlink(link), { recursive: true, force: true });
  await rm(dataDir, { recursive: true, force: true });
}

const files = [
  { name: 'cv', filename: 'cv.pdf', contentType: 'application/pdf', data: randomBytes(70_000) },
  { name: 'photo', filename: 'photo.png', contentType: 'image/png', data: randomBytes(3_000) },
];

/** The mail that reached the sink for a submission (its id is in the text). */
const mailFor = (sink: SmtpSink, id: string) => sink.messages.find((mail) => mail.parsed.text?.includes(id));
const attachmentBytes = (mail: ReceivedMail) => Object.fromEntries(mail.parsed.attachments.map((file) => [file.filename, Buffer.from(file.content)]));

describe('backup and restore under npm start', () => {
  let sink: SmtpSink;
  let base: string;
  let dataDir: string;
  let freshDir: string;
  let archive: string;

  beforeAll(async () => {
    sink = await startSmtpSink();
    base = await mkdtemp(path.join(tmpdir(), 'cfs backup-'));
    dataDir = path.join(base, 'data');
    freshDir = path.join(base, 'fresh data');
    archive = path.join(base, 'backup.tar.gz');
  });

  afterAll(async () => {
    killSpawned();
    await removeDataDir(dataDir);
    await removeDataDir(freshDir);
    await rm(base, { recursive: true, force: true });
    await sink.close();
  });

  it(
    'backs up a running service, restores it into a fresh DATA_DIR, and the next npm start serves it and delivers what waited',
    async () => {
      // Every email is refused for now: the new key's email and the submissions' stay waiting.
      sink.behave(refuseEverything);
      const port = await freePort();
      const env = localEnv(dataDir, { PORT: String(port), SMTP_URL: sink.url, SPAM_FILTER: 'off', RATE_LIMIT_MAX: '1000' });
      const running = await npmStart(env);
      const api = { url: `http://localhost:${port}` };

      const generated = await postJson(`${api.url}/`, { email: 'owner@example.test' });
      expect(generated.status).toBe(200);
      const key = (generated.json as { key: string }).key;
      const withFiles = await submitMultipart(api, [
        { name: 'access_key', value: key },
        { name: 'email', value: 'visitor@example.org' },
        { name: 'message', value: 'Two files attached' },
        ...files,
      ]);
      expect(withFiles.status, withFiles.text).toBe(200);
      const plain = await submitJson(api, { access_key: key, email: 'visitor@example.org', message: 'No files' });
      expect(plain.status).toBe(200);
      const ids = [withFiles.json.submission_id as string, plain.json.submission_id as string];

      // Each was tried and refused: they wait to be tried again.
      const db = running.banner.PostgreSQL!;
      const statuses = async () =>
        [
          ...(await query<{ email_status: string }>(db, 'select email_status from submissions')),
          ...(await query<{ email_status: string }>(db, 'select email_status from key_emails')),
        ].map((row) => row.email_status);
      await eventually(async () => ((await statuses()).every((status) => status === 'retrying') ? true : undefined), 30_000, 'refused emails');
      expect(await statuses()).toHaveLength(3);
      const storedKeys = await query<{ storage_key: string; filename: string }>(db, 'select storage_key, filename from attachments order by filename');
      expect(storedKeys.map((row) => row.filename)).toEqual(['cv.pdf', 'photo.png']);
      const secret = readFileSync(path.join(dataDir, 'secret'), 'utf8');

      // The backup is taken while the service runs.
      const backup = await npmRun('backup', [archive], env);
      expect(backup.code, backup.output).toBe(0);
      expect(backup.output).toContain(`Wrote ${archive}.`);
      expect(backup.output).toContain('Warning: the archive holds SECRET');
      expect((await stat(archive)).mode & 0o777).toBe(0o600);

      // Restoring into the data directory of a running service is refused, and changes nothing.
      const whileRunning = await npmRun('restore', [archive, '--overwrite'], env);
      expect(whileRunning.code).toBe(1);
      expect(whileRunning.output).toContain(`The service is running on ${dataDir}`);
      expect(whileRunning.output).toContain('Stop npm start (Ctrl+C) and run the restore again.');
      await stop(running);

      // The data is gone: a fresh DATA_DIR.
      const freshEnv = localEnv(freshDir, {
        PORT: String(port),
        SMTP_URL: sink.url,
        SPAM_FILTER: 'off',
        RATE_LIMIT_MAX: '1000',
        RECONCILE_INTERVAL_MS: '500',
        RECONCILE_AFTER_MS: '0',
      });
      const restore = await npmRun('restore', [archive], freshEnv);
      expect(restore.code, restore.output).toBe(0);
      expect(restore.output).toContain('2 files');
      expect(restore.output).toContain('Next: npm start.');
      expect(readFileSync(path.join(freshDir, 'secret'), 'utf8')).toBe(secret);

      // Once restored, the directory holds data: a second restore is refused unless told to overwrite.
      const again = await npmRun('restore', [archive], freshEnv);
      expect(again.code).toBe(1);
      expect(again.output).toContain('The target already holds data: ');
      expect(again.output).toContain('submissions (2 rows)');
      expect(again.output).toContain('2 stored files');
      expect(again.output).toContain('add --overwrite');
      // A backup of the stopped directory, written to stdout, restored over the first from stdin.
      const cold = path.join(base, 'cold backup.tar.gz');
      const coldBackup = await shell(`npm run -s backup -- - > '${cold}'`, env);
      expect(coldBackup.code, coldBackup.output).toBe(0);
      expect(coldBackup.output).toContain('Warning: the archive holds SECRET');
      const overwritten = await shell(`npm run -s restore -- - --overwrite < '${cold}'`, freshEnv);
      expect(overwritten.code, overwritten.output).toBe(0);
      expect(overwritten.output).toContain('2 files');

      sink.behave(undefined);
      const restored = await npmStart(freshEnv);
      try {
        // What was waiting is delivered: the new key's email and both submissions, the files attached as they were sent.
        await eventually(
          async () => (ids.every((id) => mailFor(sink, id)) && sink.messages.some((mail) => mail.parsed.text?.includes(key)) ? true : undefined),
          60_000,
          'the waiting emails',
        );
        expect(attachmentBytes(mailFor(sink, ids[0]!)!)).toEqual({ 'cv.pdf': files[0]!.data, 'photo.png': files[1]!.data });
        const submissions = () =>
          query<{ id: string; message: string; email_status: string }>(restored.banner.PostgreSQL!, 'select id, message, email_status from submissions');
        await eventually(async () => ((await submissions()).every((row) => row.email_status === 'sent') ? true : undefined), 30_000, 'sent recorded');
        expect(Object.fromEntries((await submissions()).map((row) => [row.id, row.message]))).toEqual({
          [ids[0]!]: 'Two files attached',
          [ids[1]!]: 'No files',
        });

        // The stored files are in the restored bucket, byte for byte.
        const s3 = new S3Client({ endpoint: restored.banner.S3!, region: 'us-east-1', forcePathStyle: true, credentials: LOCAL_S3_CREDENTIALS });
        for (const [index, row] of storedKeys.entries()) {
          const object = await s3.send(new GetObjectCommand({ Bucket: 'contact-form-files', Key: row.storage_key }));
          expect(Buffer.from(await object.Body!.transformToByteArray())).toEqual(files[index]!.data);
        }
        s3.destroy();

        // The key still works: the secret it is stored under came back with it.
        const after = await submitJson(api, { access_key: key, email: 'visitor@example.org', message: 'After the restore' });
        expect(after.status, after.text).toBe(200);
      } finally {
        await stop(restored);
      }
    },
    npmStartTestTimeout(2) + 60_000,
  );
});

describe('backup and restore with external PostgreSQL and S3', () => {
  let harness: Harness;
  let base: string;

  beforeAll(async () => {
    // No worker: the emails stay queued.
    harness = await startHarness({ worker: false });
    base = await mkdtemp(path.join(tmpdir(), 'cfs backup-'));
  });

  afterAll(async () => {
    killSpawned();
    await harness.stop();
    await rm(base, { recursive: true, force: true });
  });

  it('restores into an empty database and bucket; after npm run migrate, the workers deliver what was queued', async () => {
    const key = await harness.createKey();
    const sent = await submitMultipart(harness, [
      { name: 'access_key', value: key.key },
      { name: 'email', value: 'visitor@example.org' },
      { name: 'message', value: 'Queued with a file' },
      files[1]!,
    ]);
    expect(sent.status, sent.text).toBe(200);
    const id = sent.json.submission_id as string;
    const archive = path.join(base, 'external.tar.gz');
    const env = { ...process.env, ...harness.env };
    const backup = await npmRun('backup', [archive], env);
    expect(backup.code, backup.output).toBe(0);

    // Somewhere new: an empty database and an empty bucket.
    const database = await testDatabase({ migrated: false });
    const bucket = `cfs-t-${randomBytes(5).toString('hex')}`;
    await harness.storage.client.send(new CreateBucketCommand({ Bucket: bucket }));
    const target = { ...env, DATABASE_URL: database.url, S3_BUCKET: bucket, QUEUE_PREFIX: `{t${randomBytes(5).toString('hex')}}` };
    try {
      const restore = await npmRun('restore', [archive], target);
      expect(restore.code, restore.output).toBe(0);
      expect(restore.output).toContain('Next: npm run migrate');
      const again = await npmRun('restore', [archive], target);
      expect(again.code).toBe(1);
      expect(again.output).toContain('The target already holds data: ');
      const migrate = await npmRun('migrate', [], target);
      expect(migrate.code, migrate.output).toBe(0);

      const config = loadConfig({ ...harness.env, ...target, RECONCILE_INTERVAL_MS: '200', RECONCILE_AFTER_MS: '0' });
      const worker = await startWorker(config, log);
      const api = await startApi(config, log);
      try {
        const [mail] = await eventually(
          async () => {
            const found = mailFor(harness.sink, id);
            return found ? [found] : undefined;
          },
          30_000,
          'the queued email',
        );
        expect(attachmentBytes(mail)).toEqual({ 'photo.png': files[1]!.data });
        const again = await submitJson(api, { access_key: key.key, email: 'visitor@example.org', message: 'After the restore' });
        expect(again.status, again.text).toBe(200);
      } finally {
        await worker.shutdown.run();
        await api.shutdown.run();
      }
    } finally {
      const storage = createStorage({ ...harness.config, S3_BUCKET: bucket });
      const keys = await listObjectKeys(storage);
      if (keys.length) await storage.remove(keys);
      await storage.client.send(new DeleteBucketCommand({ Bucket: bucket }));
      storage.close();
      await database.drop();
      await deleteQueueKeys(harness.env.REDIS_URL!, target.QUEUE_PREFIX);
    }
  });

  // Six restores, each its own npm and Node process: its time limit is for a busy 2-core machine.
  it('refuses an archive whose manifest leads outside it, through a link or to altered bytes: nothing uploaded, nothing left staged', async () => {
    // A file of this machine the archive must not reach: two levels above the staging directory.
    const outside = Buffer.from('a private file of this machine\n');
    await writeFile(path.join(base, 'outside.txt'), outside);
    const digest = { size: outside.length, sha256: createHash('sha256').update(outside).digest('hex') };
    const stagingParent = path.join(base, 'tmp');
    await mkdir(stagingParent);
    const stored = { key: 'crafted/file', contentType: 'text/plain' };
    const secretLine = Buffer.from(`${harness.env.SECRET}\n`);
    const secretDigest = { size: secretLine.length, sha256: createHash('sha256').update(secretLine).digest('hex') };

    const crafted: Array<{ name: string; build: (dir: string) => Promise<object>; says: string }> = [
      {
        name: 'a stored file named by a relative path out of the archive',
        build: async () => ({ files: [{ ...stored, ...digest, file: '../../outside.txt' }] }),
        says: 'the stored file crafted/file is named "../../outside.txt", outside the archive.',
      },
      {
        name: 'a table file named by an absolute path',
        build: async () => ({ tables: [{ name: 'submissions', columns: ['id'], rows: 1, ...digest, file: path.join(base, 'outside.txt') }] }),
        says: 'the table submissions is named',
      },
      {
        name: 'a symbolic link out of the archive',
        build: async (dir) => {
          await symlink('../../../outside.txt', path.join(dir, 'files/000001'));
          return { files: [{ ...stored, ...digest, file: 'files/000001' }] };
        },
        says: 'is not an archive of npm run backup (TAR_ENTRY_ERROR: linkpath escapes extraction directory)',
      },
      {
        // Would put the archive's SECRET in the bucket.
        name: 'a stored file that is a symbolic link to another file of the archive',
        build: async (dir) => {
          await symlink('../secret', path.join(dir, 'files/000001'));
          return { files: [{ ...stored, ...secretDigest, file: 'files/000001' }] };
        },
        says: 'the stored file crafted/file (files/000001) is a symbolic link, not a file.',
      },
      {
        name: 'a stored file under a directory that is a symbolic link',
        build: async (dir) => {
          await symlink('..', path.join(dir, 'files/linked'));
          return { files: [{ ...stored, ...secretDigest, file: 'files/linked/secret' }] };
        },
        says: 'the stored file crafted/file (files/linked/secret) lies under a symbolic link.',
      },
      {
        name: 'a stored file whose bytes are not those the manifest records',
        build: async (dir) => {
          await writeFile(path.join(dir, 'files/000001'), 'other bytes');
          return { files: [{ ...stored, ...digest, file: 'files/000001' }] };
        },
        says: `The archive is damaged or was altered: the stored file crafted/file (files/000001) has 11 bytes, SHA-256 ${createHash('sha256').update('other bytes').digest('hex')}; its manifest says ${digest.size} bytes`,
      },
    ];

    for (const [index, archiveCase] of crafted.entries()) {
      const dir = path.join(base, `crafted-${index}`);
      await mkdir(path.join(dir, 'database'), { recursive: true });
      await mkdir(path.join(dir, 'files'));
      const manifest = {
        format: 'contact-form-service backup',
        version: 2,
        createdAt: new Date().toISOString(),
        migrations: [],
        tables: [],
        files: [],
        ...(await archiveCase.build(dir)),
      };
      await writeFile(path.join(dir, 'manifest.json'), JSON.stringify(manifest));
      await writeFile(path.join(dir, 'secret'), secretLine);
      const archive = path.join(base, `crafted-${index}.tar.gz`);
      await tar.c({ gzip: true, cwd: dir, file: archive }, ['manifest.json', 'secret', 'database', 'files']);

      // An empty database and bucket, and --overwrite: nothing else would stop the restore.
      const database = await testDatabase({ migrated: false });
      const bucket = `cfs-t-${randomBytes(5).toString('hex')}`;
      await harness.storage.client.send(new CreateBucketCommand({ Bucket: bucket }));
      const storage = createStorage({ ...harness.config, S3_BUCKET: bucket });
      try {
        const env = { ...process.env, ...harness.env, DATABASE_URL: database.url, S3_BUCKET: bucket, TMPDIR: stagingParent };
        const restore = await npmRun('restore', [archive, '--overwrite'], env);
        expect(restore.code, `${archiveCase.name}:\n${restore.output}`).toBe(1);
        expect(restore.output, archiveCase.name).toContain(archiveCase.says);
        if (!archiveCase.says.includes('not an archive')) expect(restore.output, archiveCase.name).toContain('Nothing was changed.');
        expect(await listObjectKeys(storage), archiveCase.name).toEqual([]);
        // (Node keeps its compile cache there too.)
        expect(
          (await readdir(stagingParent)).filter((name) => name.startsWith('contact-form-restore-')),
          archiveCase.name,
        ).toEqual([]);
      } finally {
        const keys = await listObjectKeys(storage);
        if (keys.length) await storage.remove(keys);
        await storage.client.send(new DeleteBucketCommand({ Bucket: bucket }));
        storage.close();
        await database.drop();
      }
    }
  }, 300_000);
});
