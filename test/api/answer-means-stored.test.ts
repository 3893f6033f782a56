// A success answer means the submission is stored; an error answer means nothing is (no row, no
// file, no email). Here PostgreSQL is slow on purpose: a lock held on the submissions table makes
// every write wait past the API's own wait for a statement (API_PG_WAITS.queryMs).
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_PG_WAITS } from '../../src/api/unavailable.ts';
import { SETTLE_MS } from '../../src/api/submissions/store.ts';
import { groupCommit } from '../../src/shared/infra/group-commit.ts';
import {
  insertSubmissionBatch,
  insertSubmissionRows,
  submissionRow,
  type NewWebhookDelivery,
  type SubmissionRow,
} from '../../src/shared/submissions/data/submission-inserts.ts';
import { v7 as uuidv7 } from 'uuid';
import { buildRecipient, buildWebhookEndpoint } from '../support/factories.ts';
import { eventually, listObjectKeys, postJson, startHarness, type Harness } from '../support/harness.ts';
import { submitMultipart } from '../support/client.ts';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h?.stop());

/** Holds a lock that makes every INSERT into submissions wait, on a connection of the test's own. */
async function blockInserts(): Promise<{ release: () => Promise<void> }> {
  const client = new pg.Client({ connectionString: h.config.DATABASE_URL });
  await client.connect();
  await client.query('begin');
  await client.query('lock table submissions in share mode');
  return {
    release: async () => {
      await client.query('rollback');
      await client.end();
    },
  };
}

/**
 * Waits until a write of submissions (or the COMMIT of a transaction that wrote one) has waited on a
 * lock for longer than `ms`, or until `answered` says the request was answered before that.
 */
async function writeWaitingLongerThan(ms: number, answered: () => boolean = () => false): Promise<void> {
  await eventually(
    async () => {
      if (answered()) return true;
      const [row] = await h.sql<{ n: number }>(
        `select count(*)::int as n from pg_stat_activity
          where (query ilike '%insert into submissions%' or query ilike '%cfs_insert_submission%' or query ilike 'commit%')
            and wait_event_type = 'Lock' and query_start < now() - make_interval(secs => $1)`,
        [ms / 1000],
      );
      return row!.n > 0 ? true : undefined;
    },
    60_000,
    `a write waiting for more than ${ms} ms`,
  );
}

/** Waits until no statement writes submissions any more, so that every row that will commit has. */
async function writesEnded(): Promise<void> {
  await eventually(
    async () => {
      const [row] = await h.sql<{ n: number }>(
        `select count(*)::int as n from pg_stat_activity
          where pid <> pg_backend_pid() and state <> 'idle' and (query ilike '%insert into submissions%' or query ilike '%cfs_insert_submission%')`,
      );
      return row!.n === 0 ? true : undefined;
    },
    60_000,
    'the writes to end',
  );
}

describe('a database slower than the API waits for', () => {
  it('10 concurrent 900 KB submissions: each 200 has its row, and no row exists without a 200', async () => {
    const key = await h.createKey();
    await buildRecipient(h, { mailbox: key.mailbox });
    const before = (await h.sql<{ id: string }>('select id from submissions')).map((row) => row.id);
    const lock = await blockInserts();
    const big = (i: number, letter: string) => `${letter}${i} `.repeat(25_000).slice(0, 100_000);
    const answers = Array.from({ length: 10 }, (_, i) =>
      postJson(`${h.url}/api/contact-api/`, {
        access_key: key.key,
        email: 'sender@example.org',
        message: big(i, 'm'),
        ...Object.fromEntries(Array.from({ length: 8 }, (_, field) => [`field_${field}`, big(i, String.fromCharCode(97 + field))])),
      }),
    );
    let answered = 0;
    for (const answer of answers) void answer.finally(() => answered++);
    try {
      // Either every request is answered while the lock is held (PostgreSQL ended the writes at its
      // statement limit), or a write still waits past the API's own wait: without a settled outcome,
      // its request would be answered now while the INSERT still waits to commit.
      // On a busy machine the API's own wait can end before PostgreSQL's cancel arrives: those
      // requests then settle by repeating their INSERT, which can only succeed once the lock is gone,
      // so it is let go well within their SETTLE_MS.
      const since = Date.now();
      await writeWaitingLongerThan(API_PG_WAITS.queryMs + 1_000, () => answered === answers.length || Date.now() - since > SETTLE_MS / 2);
    } finally {
      await lock.release();
    }
    const settled = await Promise.all(answers);
    await writesEnded();

    const stored = (await h.sql<{ id: string }>('select id from submissions')).map((row) => row.id).filter((id) => !before.includes(id));
    const accepted = settled.filter((answer) => answer.status >= 200 && answer.status < 300).map((answer) => answer.json.submission_id as string);
    expect(stored.sort()).toEqual(accepted.sort());
    // Each visitor was told the truth: stored (200), or not stored and worth a retry (503).
    for (const answer of settled) expect([200, 503]).toContain(answer.status);
  }, 120_000);

  it('a submission with a file: answered 503 with nothing stored, neither row nor file', async () => {
    const key = await h.createKey();
    await buildRecipient(h, { mailbox: key.mailbox });
    const rowsBefore = (await h.sql<{ n: number }>('select count(*)::int as n from submissions'))[0]!.n;
    const objectsBefore = await listObjectKeys(h.storage);
    const lock = await blockInserts();
    let answered = false;
    const answer = submitMultipart(h, [
      { name: 'access_key', value: key.key },
      { name: 'email', value: 'visitor@example.org' },
      { name: 'message', value: 'With a file.' },
      { name: 'attachment', filename: 'notes.txt', data: Buffer.from('some notes\n'), contentType: 'text/plain' },
    ]).finally(() => (answered = true));
    // Either the API answers while the lock is held, or its write is still waiting past the API's wait.
    try {
      await writeWaitingLongerThan(API_PG_WAITS.queryMs + 1_000, () => answered);
    } finally {
      await lock.release();
    }
    const settled = await answer;
    await writesEnded();

    expect(settled.status).toBe(503);
    expect((await h.sql<{ n: number }>('select count(*)::int as n from submissions'))[0]!.n).toBe(rowsBefore);
    expect(await listObjectKeys(h.storage)).toEqual(objectsBefore);
  }, 120_000);
});

/**
 * Makes the COMMIT of every submission whose message starts with `prefix` wait for a lock the test
 * holds: a deferred trigger runs at COMMIT, where PostgreSQL's statement limit no longer counts, as a
 * stalled server or a slow disk would keep a write that PostgreSQL has begun.
 */
async function holdCommits(prefix: string): Promise<{ release: () => Promise<void> }> {
  const lock = 7_340_033;
  await h.sql(`create or replace function hold_submission_commit() returns trigger language plpgsql as $$
                 begin perform pg_advisory_xact_lock_shared(${lock}); return null; end $$`);
  await h.sql(`create constraint trigger hold_submission_commit after insert on submissions deferrable initially deferred
                 for each row when (starts_with(new.message, '${prefix}')) execute function hold_submission_commit()`);
  const client = new pg.Client({ connectionString: h.config.DATABASE_URL });
  await client.connect();
  await client.query('select pg_advisory_lock($1)', [lock]);
  return {
    release: async () => {
      await client.query('select pg_advisory_unlock($1)', [lock]);
      await client.end();
      await h.sql('drop trigger hold_submission_commit on submissions');
    },
  };
}

describe("a write that outlasts both PostgreSQL's statement limit and the API's wait", () => {
  it('concurrent submissions whose shared INSERT is still committing: no answer until its fate is known, then 200 with one row each', async () => {
    const key = await h.createKey();
    await buildRecipient(h, { mailbox: key.mailbox });
    const prefix = `held at commit ${uuidv7()}`;
    const hold = await holdCommits(prefix);
    const messages = Array.from({ length: 5 }, (_, i) => `${prefix} #${i}`);
    let answered = 0;
    const answers = messages.map((message) =>
      postJson(`${h.url}/api/contact-api/`, { access_key: key.key, email: 'sender@example.org', message }).finally(() => answered++),
    );
    try {
      // The first INSERT waits at its COMMIT past the API's wait, the group commit's retry of each row
      // and a repeat of it, each ended at its statement limit while waiting for the first on the
      // primary key. An answer before then is a guess: the first write may still commit.
      await writeWaitingLongerThan(4 * API_PG_WAITS.queryMs, () => answered > 0);
    } finally {
      await hold.release();
    }
    const settled = await Promise.all(answers);
    await writesEnded();

    const rows = await h.sql<{ id: string; message: string }>('select id, message from submissions where starts_with(message, $1)', [prefix]);
    messages.forEach((message, i) => {
      const answer = settled[i]!;
      const stored = rows.filter((row) => row.message === message).map((row) => row.id);
      // A 200 has its row, once; an error answer has none, not even one committed after it.
      if (answer.status === 200) expect(stored, message).toEqual([answer.json.submission_id]);
      else expect({ status: answer.status, stored }, message).toEqual({ status: answer.status, stored: [] });
    });
  }, 180_000);

  it("an unconfirmed mailbox's submission (a transaction with the admission's writes) whose COMMIT is still under way: 200 with its row once it commits", async () => {
    const key = await h.createKey();
    await buildRecipient(h, { mailbox: key.mailbox, confirmedAt: null });
    const message = `held at commit ${uuidv7()}`;
    const hold = await holdCommits(message);
    let answered = false;
    const answer = postJson(`${h.url}/api/contact-api/`, { access_key: key.key, email: 'sender@example.org', message }).finally(() => (answered = true));
    try {
      // The COMMIT waits past the API's wait and a settling read's wait for the submission's write lock.
      await writeWaitingLongerThan(3 * API_PG_WAITS.queryMs, () => answered);
    } finally {
      await hold.release();
    }
    const settled = await answer;
    await writesEnded();

    const rows = await h.sql<{ id: string }>('select id from submissions where message = $1', [message]);
    expect({ status: settled.status, stored: rows.map((row) => row.id) }).toEqual({ status: 200, stored: [settled.json.submission_id] });
  }, 180_000);
});

/** A new row of the group commit, `queued`, for the key with this id. */
const queuedRow = (id: string, keyId: string, n: number, webhookDeliveries: NewWebhookDelivery[] = []): SubmissionRow =>
  submissionRow({
    id,
    keyId,
    email: 'sender@example.org',
    message: `message ${n}`,
    subject: 'Hello',
    customFields: [],
    emailStatus: 'queued',
    clientIp: '127.0.0.1',
    origin: undefined,
    webhookDeliveries,
  });

describe('the group commit of submission rows', () => {
  it('retries the items of a shared write that committed but whose answer was lost, and each caller is told stored, once', async () => {
    const key = await h.createKey();
    const em = h.orm.em.fork();
    let shared = 0;
    const write = groupCommit<SubmissionRow>(
      async (rows) => {
        await insertSubmissionRows(em, rows);
        // The first shared write commits, then its answer is lost.
        if (rows.length > 1 && shared++ === 0) throw new Error('Connection terminated unexpectedly');
      },
      { maxInFlight: 1 },
    );
    const ids = Array.from({ length: 5 }, () => uuidv7());
    const results = await Promise.allSettled(ids.map((id, i) => write(queuedRow(id, key.id, i))));
    expect(shared).toBe(1);
    expect(results.map((result) => result.status)).toEqual(Array(5).fill('fulfilled'));
    const rows = await h.sql<{ id: string }>('select id from submissions where id = any($1::uuid[])', [ids]);
    expect(rows.map((row) => row.id).sort()).toEqual([...ids].sort());
  });

  it("writes each row's webhook deliveries with it, once, when a shared write is retried item by item, and none for a disabled endpoint", async () => {
    const key = await h.createKey();
    const endpoint = await buildWebhookEndpoint(h, { key });
    const disabled = await buildWebhookEndpoint(h, { key, enabled: false });
    const pool = new pg.Pool({ connectionString: h.config.DATABASE_URL, max: 2 });
    const em = h.orm.em.fork();
    try {
      let shared = 0;
      // Shared writes go through the group commit's prepared statement; the retries of their items through the ORM's.
      const write = groupCommit<SubmissionRow>(
        async (rows) => {
          if (rows.length === 1) return insertSubmissionRows(em, rows);
          await insertSubmissionBatch(pool, rows);
          if (shared++ === 0) throw new Error('Connection terminated unexpectedly');
        },
        { maxInFlight: 1 },
      );
      const ids = Array.from({ length: 6 }, () => uuidv7());
      const deliveryIds = new Map(ids.map((id) => [id, [uuidv7(), uuidv7()]] as const));
      const results = await Promise.allSettled(
        ids.map((id, i) =>
          write(
            queuedRow(
              id,
              key.id,
              i,
              // Every other row has webhooks, so that a batch mixes rows with and without them.
              i % 2 === 0
                ? [
                    { id: deliveryIds.get(id)![0], endpointId: endpoint.id },
                    { id: deliveryIds.get(id)![1], endpointId: disabled.id },
                  ]
                : [],
            ),
          ),
        ),
      );
      expect(shared).toBe(1);
      expect(results.map((result) => result.status)).toEqual(Array(6).fill('fulfilled'));
      const deliveries = await h.sql<{ id: string; endpoint_id: string; submission_id: string }>(
        'select id, endpoint_id, submission_id from webhook_deliveries where submission_id = any($1::uuid[]) order by submission_id',
        [ids],
      );
      const expected = ids.filter((_, i) => i % 2 === 0).map((id) => ({ id: deliveryIds.get(id)![0], endpoint_id: endpoint.id, submission_id: id }));
      expect(deliveries).toEqual(expected);
    } finally {
      await pool.end();
    }
  });
});
