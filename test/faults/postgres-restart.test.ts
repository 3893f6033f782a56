// PostgreSQL is killed (SIGKILL, as an OOM kill or a crashed host does) and started again on the
// same data directory while submissions arrive and workers deliver. No 200 is answered for a row
// that was not committed; while it is down the API answers 503 with Retry-After, fast and in the
// error shape; once it is back the API and the workers recover on their own, and every 200 is
// delivered.
import { lstatSync, readFileSync } from 'node:fs';
import { mkdtemp, readlink, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrm, migrate } from '../../src/shared/infra/db/orm.ts';
import { entities } from '../../src/shared/schema.ts';
import { freePort, startPostgres, type LocalService } from '../../src/local/services.ts';
import { eventually, startHarness, type Harness } from '../support/harness.ts';
import { descendants } from '../support/processes.ts';
import { sleep } from '../support/sleep.ts';

/** How long a client waits for an answer before it gives up. */
const CLIENT_TIMEOUT_MS = 10_000;
const CLIENTS = 6;
const DOWN_MS = 3_000;

let dir: string;
let port: number;
let postgres: LocalService;
let h: Harness;
let key: string;

beforeAll(async () => {
  dir = path.join(await mkdtemp(path.join(tmpdir(), 'cfs-pg-restart-')), 'postgres');
  port = await freePort();
  postgres = await startPostgres({ dir, persistent: true, port });
  const orm = await createOrm(postgres.url, entities, 2);
  await migrate(orm);
  await orm.close();
  h = await startHarness({
    env: {
      DATABASE_URL: postgres.url,
      RECONCILE_INTERVAL_MS: '500',
      RECONCILE_AFTER_MS: '1000',
      CLAIM_LEASE_MS: '2000',
      JOB_LOCK_MS: '2000',
    },
  });
  key = (await h.createKey()).key;
}, 60_000);

afterAll(async () => {
  await h?.stop();
  await postgres?.stop();
  if (lstatSync(dir, { throwIfNoEntry: false })?.isSymbolicLink()) await rm(await readlink(dir), { recursive: true, force: true });
  await rm(path.dirname(dir), { recursive: true, force: true });
});

/** SIGKILL to the postmaster and every backend, as when its container or host dies. */
function killPostgres(): void {
  const postmaster = Number(readFileSync(path.join(dir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  for (const pid of [postmaster, ...descendants(postmaster)]) process.kill(pid, 'SIGKILL');
}

type Outcome = { status: number; retryAfter: string | null; body: any; ms: number } | { error: string; ms: number };

async function submitOnce(message: string): Promise<Outcome> {
  const t0 = Date.now();
  try {
    const response = await fetch(`${h.url}/api/contact-api/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ access_key: key, email: 'visitor@example.org', message }),
      signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS),
    });
    return { status: response.status, retryAfter: response.headers.get('retry-after'), body: await response.json(), ms: Date.now() - t0 };
  } catch (error) {
    return { error: String(error), ms: Date.now() - t0 };
  }
}

describe('PostgreSQL restart under load', () => {
  it('answers 200 only for committed rows, 503 with Retry-After while down, and delivers every 200', async () => {
    const outcomes: Outcome[] = [];
    let running = true;
    let sent = 0;
    const clients = Array.from({ length: CLIENTS }, async (_, client) => {
      // Bounded: at most 400 requests per client, and the loop ends when the test says so.
      for (let i = 0; running && i < 400; i++) {
        outcomes.push(await submitOnce(`client ${client} request ${i}`));
        sent += 1;
        // Each client's pace: about 50 requests a second.
        await sleep(20);
      }
    });

    // A second of load before the kill, then the outage held for DOWN_MS, readiness read halfway.
    await sleep(1_000);
    const beforeKill = outcomes.length;
    killPostgres();
    await sleep(DOWN_MS / 2);
    const ready = await fetch(`${h.url}/readyz`);
    expect(ready.status).toBe(503);
    expect(((await ready.json()) as { down: string[] }).down).toContain('postgres');
    await sleep(DOWN_MS / 2);
    const downOutcomes = outcomes.slice(beforeKill);
    postgres = await startPostgres({ dir, persistent: true, port });
    const restartedAt = Date.now();

    // The API recovers without a restart: a submission succeeds within seconds.
    await eventually(
      async () => {
        const outcome = await submitOnce('after the restart');
        return 'status' in outcome && outcome.status === 200 ? true : undefined;
      },
      15_000,
      'a 200 after PostgreSQL is back',
    );
    const recoveredInMs = Date.now() - restartedAt;
    // A second more of load after the recovery.
    await sleep(1_000);
    running = false;
    await Promise.all(clients);

    expect(sent).toBeGreaterThan(0);
    const failures = outcomes.filter((outcome) => 'error' in outcome);
    expect(failures, 'no request may hang past the client timeout or lose its connection').toEqual([]);
    const answers = outcomes.filter((outcome): outcome is Extract<Outcome, { status: number }> => 'status' in outcome);
    expect(new Set(answers.map((answer) => answer.status))).toEqual(new Set([200, 503]));
    for (const answer of answers.filter((answer) => answer.status === 503)) {
      expect(Number(answer.retryAfter)).toBeGreaterThanOrEqual(1);
      expect(answer.body).toMatchObject({ success: false, errors: { __all__: ['The service is unavailable for a moment. Please try again in 5 seconds.'] } });
      expect(JSON.stringify(answer.body)).not.toMatch(/ECONN|stack|at /);
    }
    expect(downOutcomes.some((outcome) => 'status' in outcome && outcome.status === 503)).toBe(true);
    expect(recoveredInMs).toBeLessThan(10_000);

    // Every 200 is a committed row, and is delivered, by the workers that lived through the restart.
    const accepted = answers.filter((answer) => answer.status === 200).map((answer) => answer.body.submission_id as string);
    expect(accepted.length).toBeGreaterThan(10);
    const rows = await h.sql<{ id: string }>('select id from submissions where id = any($1::uuid[])', [accepted]);
    expect(rows.length).toBe(accepted.length);
    await eventually(
      async () => {
        const [row] = await h.sql<{ n: number }>("select count(*)::int as n from submissions where id = any($1::uuid[]) and email_status <> 'sent'", [
          accepted,
        ]);
        return row!.n === 0 ? true : undefined;
      },
      60_000,
      'every accepted submission to be sent',
    );
    const delivered = new Set(h.sink.messages.map((mail) => mail.parsed.messageId));
    for (const id of accepted) expect(delivered.has(`<submission-${id}@example.test>`), id).toBe(true);

    // No pooled connection was lost to the restart: a transaction cut short still gives its
    // connection back (otherwise each restart would shrink the API's pool until it hangs).
    const pool = (await h.api.deps.orm.em.getConnection().getNativeClient()) as { totalCount: number; idleCount: number };
    await eventually(async () => (pool.idleCount === pool.totalCount ? true : undefined), 5_000, 'every pooled connection to be back in the pool');
  });
});
