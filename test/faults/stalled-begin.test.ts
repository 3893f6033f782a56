// A transaction whose BEGIN the API gave up on (PostgreSQL stalled past the pool's query_timeout)
// must not leave its connection in the pool: the BEGIN runs once PostgreSQL resumes, and a statement
// sent next on that connection would join a transaction nobody commits, report success, and be lost.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrm, type MikroORM } from '../../src/shared/infra/db/orm.ts';
import { entities } from '../../src/shared/schema.ts';
import { startPostgres, type LocalService } from '../../src/local/services.ts';
import { sleep } from '../support/sleep.ts';

/** The pool's wait for each statement's answer: the stall below outlasts it. */
const QUERY_MS = 1_000;

let dir: string;
let postgres: LocalService;
let admin: pg.Client;
let orm: MikroORM;

beforeAll(async () => {
  dir = path.join(await mkdtemp(path.join(tmpdir(), 'cfs-pg-stalled-begin-')), 'postgres');
  postgres = await startPostgres({ dir, persistent: false });
  admin = new pg.Client({ connectionString: postgres.url });
  await admin.connect();
  await admin.query('create table stalled_begin (id int primary key)');
  // One connection, so the statement after the stall gets the one that was stalled, or a new one.
  orm = await createOrm(postgres.url, entities, 1, { connectMs: 5_000, queryMs: QUERY_MS });
}, 60_000);

afterAll(async () => {
  await orm?.close();
  await admin?.end();
  await postgres?.stop();
  await rm(path.dirname(dir), { recursive: true, force: true });
});

describe('a connection whose statement was given up on', () => {
  it('is not reused: a statement reported done afterwards is committed', async () => {
    const [row] = await orm.em.fork().execute<Array<{ pid: number }>>('select pg_backend_pid() as pid');
    const pid = row!.pid;
    process.kill(pid, 'SIGSTOP');
    let failed: unknown;
    try {
      const transaction = orm.em
        .fork()
        .transactional((tx) => tx.execute('insert into stalled_begin values (1)'))
        .catch((error: unknown) => (failed = error));
      await sleep(QUERY_MS * 2);
      process.kill(pid, 'SIGCONT');
      await transaction;
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    expect(String(failed)).toMatch(/Query read timeout/);
    // The stalled BEGIN has run by now, on whichever connection still holds it.
    await sleep(500);

    await orm.em.fork().execute('insert into stalled_begin values (2)');
    const { rows } = await admin.query<{ id: number }>('select id from stalled_begin order by id');
    expect(rows.map((row) => row.id)).toEqual([2]);
  }, 60_000);
});
