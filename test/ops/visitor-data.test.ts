// A visitor's data on request (GDPR access and erasure): `npm run admin -- visitor export|erase
// <address>` and the admin API's /admin/visitors/export and /admin/visitors/erase, over the real
// PostgreSQL, Redis and S3 of the harness. The check after an erasure reads every text and JSON
// column of every table, whatever the schema holds by then, so that a new table is covered too.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DELIVERY_QUEUE, WEBHOOK_QUEUE } from '../../src/shared/infra/queues/jobs.ts';
import { adminClient, submitMultipart } from '../support/client.ts';
import { buildKeyRecipient, buildRecipientCopy, buildSubmission } from '../support/factories.ts';
import { listObjectKeys, startHarness, type Harness } from '../support/harness.ts';
import { jsonOrUndefined } from '../support/http.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
// One command through npm takes about 2 s; beside two busy loops a single one outlasted 30 s.
const CLI_LIMIT_MS = 60_000;
const TEST_LIMIT_MS = 4 * CLI_LIMIT_MS;
const TOKEN = 'visitor-data-admin-token-0123456789';

let h: Harness;
let redis: Redis;
let queues: Queue[];
beforeAll(async () => {
  h = await startHarness({ worker: false, env: { ADMIN_TOKEN: TOKEN } });
  redis = new Redis(h.env.REDIS_URL!, { maxRetriesPerRequest: 1 });
  queues = [DELIVERY_QUEUE, WEBHOOK_QUEUE].map((name) => new Queue(name, { connection: redis, prefix: h.env.QUEUE_PREFIX }));
}, 90_000);
afterAll(async () => {
  await Promise.all((queues ?? []).map((queue) => queue.close()));
  redis?.disconnect();
  await h?.stop();
});
const admin = adminClient(() => h, TOKEN);

function cli(...args: string[]) {
  const result = spawnSync('npm', ['run', '--silent', 'admin', '--', ...args], {
    cwd: ROOT,
    env: { ...process.env, ...h.env },
    encoding: 'utf8',
    timeout: CLI_LIMIT_MS,
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

type Stored = {
  keys: { first: string; second: string };
  submissionIds: string[];
  files: Map<string, Buffer>;
  objectKeys: string[];
  copyId: string;
  others: { submissionId: string; objectKeys: string[] };
};

const field = (name: string, value: string) => ({ name, value });

/**
 * A visitor's data across the service: two messages with a file each to two forms (their email
 * jobs queued), a delivery attempt whose reply names the address, a hard bounce that suppresses
 * it, an autoresponse sent an hour ago, and its place as a confirmed added recipient of a third
 * form, with the copy of another visitor's message it received there. Beside it, another
 * visitor's message with a file, which must stay.
 */
async function storeVisitor(typed: string, stored: string): Promise<Stored> {
  const [first, second, third] = [await h.createKey(), await h.createKey(), await h.createKey()];
  const files = new Map<string, Buffer>([
    ['first.bin', randomBytes(3000)],
    ['second.txt', Buffer.from(`notes of ${stored}\n`)],
  ]);
  const submissionIds: string[] = [];
  for (const [key, filename] of [
    [first, 'first.bin'],
    [second, 'second.txt'],
  ] as const) {
    const response = await submitMultipart(h, [
      field('access_key', key.key),
      field('email', typed),
      field('message', `A question from ${typed}`),
      field('phone', '+41 44 000 00 00'),
      { name: 'attachment', filename, data: files.get(filename)!, contentType: 'application/octet-stream' },
    ]);
    expect(response.status).toBe(200);
    submissionIds.push((jsonOrUndefined(response.text) as { submission_id: string }).submission_id);
  }
  const other = await submitMultipart(h, [
    field('access_key', first.key),
    field('email', 'someone.else@example.net'),
    field('message', 'Another visitor'),
    { name: 'attachment', filename: 'other.bin', data: randomBytes(100), contentType: 'application/octet-stream' },
  ]);
  expect(other.status).toBe(200);
  const otherId = (jsonOrUndefined(other.text) as { submission_id: string }).submission_id;

  await h.sql(`insert into delivery_attempts (submission_id, attempt, outcome, response, worker) values ($1, 1, 'retrying', $2, 'mx-test')`, [
    submissionIds[0],
    `451 4.2.0 <${stored}>: try again later`,
  ]);
  await h.sql(`insert into address_bounces (address, hard_bounces, last_bounced_at, suppressed_until) values ($1, 2, now(), now() + interval '30 days')`, [
    stored,
  ]);
  await h.sql(
    `insert into autoresponses (id, submission_id, key_id, email, mailbox, email_status, sent_at, created_at)
     values (gen_random_uuid(), $1, $2, $3, $4, 'sent', now() - interval '1 hour', now() - interval '1 hour')`,
    [submissionIds[0], first.id, typed, stored],
  );
  const recipient = await buildKeyRecipient(h, { key: third, email: stored, confirmed: true });
  const copy = await buildRecipientCopy(h, {
    submission: await buildSubmission(h, { key: third, email: 'writer@example.net', status: 'sent' }),
    recipient,
    status: 'sent',
  });

  const objectKeysOf = async (ids: string[]) =>
    (await h.sql<{ storage_key: string }>('select storage_key from attachments where submission_id = any($1)', [ids])).map((row) => row.storage_key);
  return {
    keys: { first: first.id, second: second.id },
    submissionIds,
    files,
    objectKeys: await objectKeysOf(submissionIds),
    copyId: copy.id,
    others: { submissionId: otherId, objectKeys: await objectKeysOf([otherId]) },
  };
}

/** Every text, JSON and search column of every table holding `needle` (any case): "table.column" for each. */
async function columnsHolding(needle: string): Promise<string[]> {
  const columns = await h.sql<{ table_name: string; column_name: string }>(
    `select c.table_name, c.column_name from information_schema.columns c join information_schema.tables t using (table_schema, table_name)
      where c.table_schema = 'public' and t.table_type = 'BASE TABLE'
        and (c.data_type in ('text', 'character varying', 'character', 'json', 'jsonb', 'tsvector', 'ARRAY') or c.udt_name = 'citext')`,
  );
  expect(columns.length).toBeGreaterThan(20);
  const found: string[] = [];
  for (const { table_name: table, column_name: column } of columns) {
    const [row] = await h.sql<{ n: number }>(`select count(*)::int as n from "${table}" where "${column}"::text ilike $1`, [`%${needle}%`]);
    if (row!.n > 0) found.push(`${table}.${column}`);
  }
  return found;
}

/** The jobs of every delivery queue, in any state, that name one of `ids` (as their id or in their data). */
async function jobsNaming(ids: string[]): Promise<string[]> {
  const named: string[] = [];
  for (const queue of queues) {
    for (const job of await queue.getJobs()) {
      const text = `${job.id} ${JSON.stringify(job.data)}`;
      if (ids.some((id) => text.includes(id))) named.push(`${queue.name}:${job.id}`);
    }
  }
  return named;
}

describe('npm run admin -- visitor export', { timeout: TEST_LIMIT_MS }, () => {
  it('writes everything stored about the address, across keys, as one JSON document with the files', async () => {
    const stored = await storeVisitor('Export.Visitor@Example.org', 'export.visitor@example.org');
    const dir = mkdtempSync(path.join(os.tmpdir(), 'visitor-export-'));
    try {
      const file = path.join(dir, 'export.json');
      const result = cli('visitor', 'export', 'EXPORT.visitor@example.org', '--out', file);
      expect(result.stderr).toContain('exported 2 submissions, 2 files');
      expect(result.status).toBe(0);
      const text = readFileSync(file, 'utf8');
      const doc = JSON.parse(text);
      expect(doc.address).toBe('export.visitor@example.org');

      expect(doc.submissions.map((s: any) => s.id).toSorted()).toEqual(stored.submissionIds.toSorted());
      expect(doc.submissions.map((s: any) => s.key_id).toSorted()).toEqual([stored.keys.first, stored.keys.second].toSorted());
      for (const submission of doc.submissions) {
        expect(submission.message).toBe('A question from Export.Visitor@Example.org');
        expect(submission.custom_fields).toContainEqual(['phone', '+41 44 000 00 00']);
        expect(submission.files).toHaveLength(1);
        const [attached] = submission.files;
        expect(Buffer.from(attached.content_base64, 'base64').equals(stored.files.get(attached.filename)!)).toBe(true);
      }
      const attempts = doc.submissions.flatMap((s: any) => s.delivery_attempts);
      expect(attempts.map((a: any) => a.response)).toEqual(['451 4.2.0 <export.visitor@example.org>: try again later']);

      expect(doc.queued_jobs.map((job: any) => job.id)).toEqual(expect.arrayContaining(stored.submissionIds));
      expect(doc.address_bounces).toEqual([expect.objectContaining({ address: 'export.visitor@example.org', hard_bounces: 2 })]);
      expect(doc.autoresponses).toEqual([expect.objectContaining({ email: 'Export.Visitor@Example.org', email_status: 'sent' })]);
      expect(doc.added_recipient_of).toEqual([expect.objectContaining({ email: 'export.visitor@example.org', confirmed_at: expect.any(String) })]);
      expect(doc.copies_received.map((copy: any) => copy.id)).toEqual([stored.copyId]);
      // Only this visitor's: not another's message, file or address.
      expect(text).not.toContain('someone.else@example.net');
      expect(text).not.toContain('writer@example.net');

      // The admin API streams the same document.
      const viaApi = await admin('GET', `/admin/visitors/export?email=${encodeURIComponent('export.visitor@example.org')}`);
      expect(viaApi.status).toBe(200);
      expect(viaApi.headers.get('content-disposition')).toContain('visitor-export.json');
      expect(viaApi.json.submissions.map((s: any) => s.id).toSorted()).toEqual(stored.submissionIds.toSorted());
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('npm run admin -- visitor erase', { timeout: TEST_LIMIT_MS }, () => {
  it('leaves nothing of the address in PostgreSQL, S3 or the queues, and the address suppressed', async () => {
    const stored = await storeVisitor('Erase.Visitor@Example.org', 'erase.visitor@example.org');
    expect(await jobsNaming(stored.submissionIds)).toHaveLength(2);
    expect(await columnsHolding('erase.visitor@example.org')).not.toEqual([]);

    const result = cli('visitor', 'erase', 'erase.visitor@example.org');
    expect(result.stderr).toContain('submissions: 2 of 2\nautoresponses: 1\nadded recipient: 2\nemails: 0\nsuppression and consent: 1\n');
    expect(result.status).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ submissions: 2, copies_deleted: 1, recipient_entries_deleted: 1, bounces_kept_erased: 1, keys_owned: 0 });

    expect(await columnsHolding('erase.visitor@example.org')).toEqual([]);
    expect(await columnsHolding('erase.visitor')).toEqual([]);
    const objects = await listObjectKeys(h.storage);
    expect(objects.filter((key) => stored.objectKeys.includes(key))).toEqual([]);
    expect(await jobsNaming([...stored.submissionIds, stored.copyId])).toEqual([]);

    // The other visitor's message, file and job are untouched.
    expect(objects).toEqual(expect.arrayContaining(stored.others.objectKeys));
    expect(await h.sql('select id from submissions where id = $1', [stored.others.submissionId])).toHaveLength(1);
    expect(await jobsNaming([stored.others.submissionId])).toHaveLength(1);

    // Its suppression holds, under a form that is not the address.
    const [kept] = await h.sql<{ address: string; suppressed: boolean }>(
      'select address, suppressed_until > now() as suppressed from address_bounces where address like $1',
      ['erased:%'],
    );
    expect(kept).toEqual({ address: expect.stringMatching(/^erased:[0-9a-f]{64}$/), suppressed: true });

    // Run again: nothing more to do, and nothing fails.
    const again = cli('visitor', 'erase', 'erase.visitor@example.org');
    expect(again.status).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ submissions: 0, copies_deleted: 0, bounces_kept_erased: 0 });
  });

  it('refuses what is not an address and prints usage for a bad command', () => {
    const refused = cli('visitor', 'erase', 'not-an-address');
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain('Not an email address');
    const usage = cli('visitor', 'forget', 'a@example.org');
    expect(usage.status).toBe(2);
    expect(usage.stderr).toContain('visitor erase <address>');
  });
});

describe('an added recipient erased', { timeout: TEST_LIMIT_MS }, () => {
  it('is taken off the form with its request to confirm, and is not asked again within the day', async () => {
    const key = await h.createKey();
    const added = await admin('PATCH', `/admin/keys/${key.key}`, { recipients: ['Colleague.Erased@example.org'] });
    expect(added.status).toBe(200);
    const [request] = await h.sql<{ id: string }>(`select id from key_emails where kind = 'recipient-confirm' and key_id = $1`, [key.id]);
    expect(await jobsNaming([request!.id])).toHaveLength(1);
    // Sent, as a worker would have: it reached the inbox, so the day's bound counts it.
    await h.sql(`update key_emails set email_status = 'sent', sent_at = now(), message_id = $2 where id = $1`, [request!.id, '<colleague.erased@example.org>']);

    const result = cli('visitor', 'erase', 'colleague.erased@example.org');
    expect(result.status).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ recipient_entries_deleted: 1, key_emails_kept_erased: 1 });
    expect(await columnsHolding('colleague.erased')).toEqual([]);
    expect(await jobsNaming([request!.id])).toEqual([]);
    const listed = await admin('GET', `/admin/keys?email=${encodeURIComponent(key.email)}`);
    expect(listed.json.keys[0].recipients).toEqual([]);

    // Its request of today still counts: one a day per form, erased or not.
    const again = await admin('PATCH', `/admin/keys/${key.key}`, { recipients: ['colleague.erased@example.org'] });
    expect(again.status).toBe(429);
    expect(again.json.errors.recipients[0]).toContain('was asked to confirm for this key in the last 24 hours');
  });
});

describe('POST /admin/visitors/erase', { timeout: TEST_LIMIT_MS }, () => {
  it("streams the erasure's progress as JSON lines, the summary last", async () => {
    const key = await h.createKey();
    const submission = await buildSubmission(h, { key, email: 'Api.Visitor@example.org', status: 'sent' });
    const response = await admin('POST', '/admin/visitors/erase', { email: 'api.visitor@EXAMPLE.org' });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('application/x-ndjson');
    const lines = response.text
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(lines[0]).toEqual({ step: 'submissions', done: 1, total: 1 });
    expect(lines.at(-1)).toMatchObject({ done: true, summary: { address: 'api.visitor@example.org', submissions: 1 } });
    expect(await h.sql('select id from submissions where id = $1', [submission.id])).toEqual([]);
  });

  it('answers 400 for no address and 401 without the token, as the other admin routes', async () => {
    const invalid = await admin('POST', '/admin/visitors/erase', { email: 'nobody' });
    expect(invalid.status).toBe(400);
    expect(invalid.json.errors.email).toEqual(['Enter a valid email address.']);
    expect((await admin('POST', '/admin/visitors/erase', { email: 'a@example.org' }, null)).status).toBe(401);
    expect((await admin('GET', '/admin/visitors/export?email=a@example.org', undefined, null)).status).toBe(401);
  });
});
