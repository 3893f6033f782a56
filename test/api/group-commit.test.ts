// Group commit (src/shared/infra/group-commit.ts): concurrent submissions share one INSERT and one
// addBulk, and each is answered only once the write that carried it has committed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { groupCommit } from '../../src/shared/infra/group-commit.ts';
import { buildRecipient } from '../support/factories.ts';
import { eventually, postJson, startHarness, type Harness } from '../support/harness.ts';

describe('groupCommit', () => {
  it('sends what arrives during a write as one batch, and settles each caller only after its own write', async () => {
    const writes: number[][] = [];
    const written = new Set<number>();
    let release: () => void = () => undefined;
    const write = groupCommit<number>(
      async (items) => {
        writes.push(items);
        await new Promise<void>((resolve) => (release = resolve));
        for (const item of items) written.add(item);
      },
      { maxInFlight: 1 },
    );
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

  it('hands each caller the result of its own item, also when a shared write is retried item by item', async () => {
    let writes = 0;
    const double = groupCommit<number, number>(
      async (items) => {
        writes += 1;
        // The second write (the first shared one) fails: its items are written again one by one.
        if (writes === 2) throw new Error('shared write failed');
        return items.map((item) => item * 2);
      },
      { maxInFlight: 1 },
    );
    expect(await Promise.all([1, 2, 3, 4].map((item) => double(item)))).toEqual([2, 4, 6, 8]);
  });

  it('with a linger, holds a lone item that long for company and no longer, and sends a full batch at once', async () => {
    const writes: Array<{ items: number[]; afterMs: number }> = [];
    const start = performance.now();
    const write = groupCommit<number>(
      async (items) => {
        writes.push({ items, afterMs: performance.now() - start });
      },
      { maxInFlight: 1, maxBatch: 3, lingerMs: 300 },
    );
    const first = write(1);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(writes).toEqual([]);
    await Promise.all([first, write(2)]);
    expect(writes.map((entry) => entry.items)).toEqual([[1, 2]]);
    // setTimeout may fire a millisecond early by performance.now().
    expect(writes[0]!.afterMs).toBeGreaterThanOrEqual(298);
    const full = performance.now();
    await Promise.all([3, 4, 5].map((item) => write(item)));
    expect(writes.map((entry) => entry.items)).toEqual([
      [1, 2],
      [3, 4, 5],
    ]);
    expect(performance.now() - full).toBeLessThan(250);
  });

  it('fails only the caller whose item fails, when a shared write fails', async () => {
    let hold: Promise<void> | undefined = new Promise((resolve) => setTimeout(resolve, 20));
    const write = groupCommit<string>(
      async (items) => {
        const first = hold;
        hold = undefined;
        await first;
        if (items.includes('bad')) throw new Error('bad item');
      },
      { maxInFlight: 1 },
    );
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
    await buildRecipient(h, { mailbox: key.mailbox });
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
});
