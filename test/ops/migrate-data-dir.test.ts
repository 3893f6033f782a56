// `npm run migrate` on an npm start installation, as docs/upgrading.md says to run it: with no
// DATABASE_URL it finds DATA_DIR's database as `npm run backup` does, stopped (a PostgreSQL started
// for the while) or running under npm start; a DATA_DIR without one is named, and nothing is created.
import { spawn } from 'node:child_process';
import { existsSync, lstatSync } from 'node:fs';
import { mkdtemp, readlink, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { runningPostgres, startLocalPostgres } from '../../src/local/data-dir.ts';
import { appliedMigrations } from '../../src/shared/infra/db/table-copy.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const dirs: string[] = [];
const stops: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const stop of stops) await stop();
  for (const dir of dirs) {
    // As root, the cluster lives where the postgres user can reach it, behind a link.
    const link = path.join(dir, 'postgres');
    if (lstatSync(link, { throwIfNoEntry: false })?.isSymbolicLink()) await rm(await readlink(link), { recursive: true, force: true });
    await rm(dir, { recursive: true, force: true });
  }
});

async function dataDir(): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'cfs-migrate-'));
  dirs.push(dir);
  return dir;
}

/** `npm run migrate` with this DATA_DIR and none of the test run's own services. */
function migrate(dir: string): Promise<{ code: number | null; output: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dir, LOG_LEVEL: 'warn' };
  for (const name of ['DATABASE_URL', 'DATABASE_DIRECT_URL', 'DATABASE_POOLER']) delete env[name];
  const child = spawn('npm', ['run', '--silent', 'migrate'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, output })));
}

async function migrations(url: string): Promise<string[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await appliedMigrations(client);
  } finally {
    await client.end();
  }
}

describe('npm run migrate without DATABASE_URL', () => {
  it("migrates DATA_DIR's database, stopped or running, and leaves it as it found it", async () => {
    const dir = await dataDir();
    // A cluster as an earlier npm start left it, here with nothing applied yet.
    await (await startLocalPostgres(dir)).stop();

    const stopped = await migrate(dir);
    expect(stopped, stopped.output).toMatchObject({ code: 0, output: expect.stringMatching(/^Applied: Migration\d+_/) });
    // The PostgreSQL it started for the while is stopped again.
    expect(runningPostgres(dir)).toBeUndefined();

    // Running, as under npm start: migrated through it, and it keeps running.
    const postgres = await startLocalPostgres(dir);
    stops.push(postgres.stop);
    const running = await migrate(dir);
    expect(running).toEqual({ code: 0, output: 'No pending migrations.\n' });
    expect(runningPostgres(dir)).toBeDefined();
    const applied = await migrations(postgres.url);
    expect(stopped.output).toBe(`Applied: ${applied.join(', ')}\n`);
  }, 120_000);

  it('names a DATA_DIR without a database and says npm start migrates by itself; creates nothing', async () => {
    const dir = path.join(await dataDir(), 'none');
    const run = await migrate(dir);
    expect(run.code).toBe(78);
    expect(run.output).toContain(`DATA_DIR: ${dir} has no database of npm start`);
    expect(run.output).toContain('npm start also migrates by itself');
    expect(existsSync(dir)).toBe(false);
  }, 60_000);
});
