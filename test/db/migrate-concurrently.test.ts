// `npm run migrate` started by several processes at once on the same database, as the init step of
// every new pod does on Kubernetes (deploy/kubernetes): one applies the migrations, the others wait
// for it and find nothing left to do. None fails, and no migration runs twice.
import { spawn } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MIGRATIONS_PATH } from '../../src/shared/infra/db/orm.ts';
import { testDatabase } from '../support/harness.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const RUNS = 4;

type Run = { code: number | null; stdout: string; stderr: string };

let database: Awaited<ReturnType<typeof testDatabase>>;

beforeAll(async () => {
  database = await testDatabase({ migrated: false });
});
afterAll(async () => {
  await database?.drop();
});

/** `npm run migrate`'s command (package.json), as the pods' init step runs it. */
function migrate(databaseUrl: string): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['src/cli/migrate.ts'], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', DATABASE_URL: databaseUrl },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => void (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => void (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('npm run migrate, several at once', () => {
  // Four processes start at once: seconds quiet, over a minute beside two busy loops.
  it('applies every migration once on an empty database; the other runs find none pending', { timeout: 180_000 }, async () => {
    const runs = await Promise.all(Array.from({ length: RUNS }, () => migrate(database.url)));
    for (const run of runs) expect(run, run.stderr).toMatchObject({ code: 0, stderr: '' });

    const expected = (await readdir(MIGRATIONS_PATH))
      .filter((file) => /^Migration\d+_.*\.ts$/.test(file))
      .map((file) => file.replace(/\.ts$/, ''))
      .sort();
    const applying = runs.filter((run) => run.stdout.startsWith('Applied: '));
    expect(applying).toHaveLength(1);
    expect(
      applying[0]!.stdout
        .trim()
        .replace(/^Applied: /, '')
        .split(', ')
        .sort(),
    ).toEqual(expected);
    expect(runs.filter((run) => run.stdout === 'No pending migrations.\n')).toHaveLength(RUNS - 1);

    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      const { rows } = await client.query<{ name: string }>('select name from mikro_orm_migrations order by name');
      expect(rows.map((row) => row.name.replace(/\.ts$/, ''))).toEqual(expected);
    } finally {
      await client.end();
    }
  });
});
