// Group commit (src/shared/group-commit.ts): concurrent submissions share one INSERT and one
// addBulk, and each is answered only once the write that carried it has committed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { groupCommit } from '../../src/shared/group-commit.ts';
import { insertSubmissionsWithFiles, type FileSubmission } from '../../src/api/submissions/store.ts';
import { eventually, postJson, startHarness, type Harness } from '../support/harness.ts';

describe('groupCommit', () => {
  it('sends what arrives during a write as one batch, and settles each caller only after its own write', async () => {
    const writes: number[][] = [];
    const written = new Set<number>();
    let release: () => void = () => undefined;
    const write = groupCommit<number>(async (items) => {
      writes.push(items);
      await new Promise<void>((resolve) => (release = resolve));
      for (const item of items) written.add(item);
    }, { maxInFlight: 1 });
    const seenAtResolve: boolean[] = [];
    const calls = Array.from({ length: 6 }, (_, i) => write(i).then(() => seenAtResolve.push(written.has(i))));
    await new Promise((resolve) => setImmediate(resolve));
    expect(writes).toEqual([[0]]);
    release();
    await new Promise((resolve) => setImmediate(resolve));
    expect(writes).toEqual([[0], [1, 2, 3, 4, 5]]);
    release();
    await Promise.all(calls);
    expect(seenAtResolve).toEqual(Array(6).fill(true));
  });

  it('fails only the caller whose item fails, when a shared write fails', async () => {
    let hold: Promise<void> | undefined = new Promise((resolve) => setTimeout(resolve, 20));
    const write = groupCommit<string>(async (items) => {
      const first = hold;
      hold = undefined;
      await first;
      if (items.includes('bad')) throw new Error('bad item');
    }, { maxInFlight: 1 });
    const results = await Promise.allSettled(['first', 'a', 'bad', 'b'].map((item) => write(item)));
    expect(results.map((result) => result.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
  });
});

describe('concurrent submissions', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h?.stop());

  it('each 200 comes after its own row committed, and every one is delivered once', async () => {
    const key = await h.createKey();
    await h.sql(`insert into recipients (mailbox, confirmed_at) select mailbox, now() from verification_keys where id = $1`, [key.id]);
    const committedAtAnswer = await Promise.all(
      Array.from({ length: 40 }, async (_, i) => {
        const response = await postJson(`${h.url}/api/contact-api/`, { access_key: key.key, email: 'sender@example.org', message: `message ${i}` });
        expect(response.status).toBe(200);
        const rows = await h.sql('select id from submissions where id = $1', [response.json.submission_id]);
        return rows.length;
      }),
    );
    expect(committedAtAnswer).toEqual(Array(40).fill(1));
    await eventually(async () => ((await h.sql(`select count(*)::int as n from submissions where email_status = 'sent'`))[0]!.n === 40 ? true : undefined));
    const subjects = h.sink.messages.map((mail) => mail.parsed.text ?? '').filter((text) => /message \d+/.test(text));
    expect(subjects).toHaveLength(40);
  });

  it('writes submissions with files in one statement, charging each key its batch total, and retries alone what that refuses', async () => {
    const crowded = await h.createKey();
    const other = await h.createKey();
    const quota = 1024 * 1024;
    const item = (keyId: string, n: number): FileSubmission => {
      const id = crypto.randomUUID();
      const files = [1, 2].map((f) => ({ field_name: 'file', filename: `f${f}.bin`, content_type: 'application/octet-stream', size: 200 * 1024, storage_key: `gc/${id}/${f}`, sha256: 'ab'.repeat(32) }));
      return {
        id,
        quotaMb: 1,
        row: { id, key_id: keyId, email: 'sender@example.org', message: `m${n}`, subject: 's', custom_fields: [], email_status: 'queued', client_ip: '127.0.0.1', origin: null, bytes: 400 * 1024, quota, files },
      };
    };
    // 3 × 400 KB on a 1 MB quota: together too much, so that key's are retried one by one (two fit);
    // the other key's two go in the shared statement.
    const items = [item(crowded.id, 1), item(other.id, 2), item(crowded.id, 3), item(other.id, 4), item(crowded.id, 5)];
    await insertSubmissionsWithFiles(h.orm.em.fork(), items);

    expect(items.map((entry) => (entry.failure as { status?: number } | undefined)?.status)).toEqual([undefined, undefined, undefined, undefined, 413]);
    const rows = await h.sql<{ id: string; xmin: string }>('select id, xmin::text as xmin from submissions where id = any($1::uuid[])', [items.map((entry) => entry.id)]);
    expect(rows.map((row) => row.id).sort()).toEqual(items.slice(0, 4).map((entry) => entry.id).sort());
    const xminOf = (id: string) => rows.find((row) => row.id === id)!.xmin;
    expect(xminOf(items[1]!.id)).toBe(xminOf(items[3]!.id));
    const stored = await h.sql('select id, stored_bytes::int as bytes from verification_keys where id = any($1::uuid[]) order by id', [[crowded.id, other.id]]);
    expect(Object.fromEntries(stored.map((row) => [row.id, row.bytes]))).toEqual({ [crowded.id]: 800 * 1024, [other.id]: 800 * 1024 });
    const attachments = await h.sql('select s.message, a.filename from attachments a join submissions s on s.id = a.submission_id where s.id = any($1::uuid[]) order by s.message, a.created_at', [items.map((entry) => entry.id)]);
    expect(attachments.map((row) => `${row.message}/${row.filename}`)).toEqual(['m1/f1.bin', 'm1/f2.bin', 'm2/f1.bin', 'm2/f2.bin', 'm3/f1.bin', 'm3/f2.bin', 'm4/f1.bin', 'm4/f2.bin']);
  });
});
