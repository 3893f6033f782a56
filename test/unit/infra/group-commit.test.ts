// Group commit (src/shared/infra/group-commit.ts), on writes of the test's own: what arrives during a
// write goes in the next one, each caller is settled after its own write and with its own result.
// test/api/group-commit.test.ts holds it against PostgreSQL, with concurrent submissions.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { groupCommit } from '../../../src/shared/infra/group-commit.ts';

describe('groupCommit', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('sends the calls of one turn of the event loop together, what arrives during a write as the next batch, and settles each caller only after its own write', async () => {
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
    const call = (i: number) => write(i).then(() => seenAtResolve.push(written.has(i)));
    const calls = [0, 1].map(call);
    await new Promise((resolve) => setImmediate(resolve));
    expect(writes).toEqual([[0, 1]]);
    calls.push(...[2, 3, 4, 5].map(call));
    await new Promise((resolve) => setImmediate(resolve));
    expect(writes).toEqual([[0, 1]]);
    release();
    // The write settles, then the next one starts at the end of that turn.
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    expect(writes).toEqual([
      [0, 1],
      [2, 3, 4, 5],
    ]);
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
    // The clock is vitest's: what is held, and until when, is read off it, not measured.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setImmediate', 'clearImmediate', 'performance'] });
    const writes: Array<{ items: number[]; atMs: number }> = [];
    const start = performance.now();
    const write = groupCommit<number>(
      async (items) => {
        writes.push({ items, atMs: performance.now() - start });
      },
      { maxInFlight: 1, maxBatch: 3, lingerMs: 300 },
    );
    const first = write(1);
    await vi.advanceTimersByTimeAsync(50);
    expect(writes).toEqual([]);
    const second = write(2);
    await vi.advanceTimersByTimeAsync(249);
    expect(writes).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    await Promise.all([first, second]);
    expect(writes).toEqual([{ items: [1, 2], atMs: 300 }]);
    // A full batch waits for no timer: it is written before the clock moves on.
    const full = Promise.all([3, 4, 5].map((item) => write(item)));
    await vi.advanceTimersByTimeAsync(0);
    expect(writes).toEqual([
      { items: [1, 2], atMs: 300 },
      { items: [3, 4, 5], atMs: 300 },
    ]);
    await full;
  });

  it('fails only the caller whose item fails, when a shared write fails', async () => {
    let open: () => void = () => undefined;
    let hold: Promise<void> | undefined = new Promise((resolve) => (open = resolve));
    const write = groupCommit<string>(
      async (items) => {
        const first = hold;
        hold = undefined;
        await first;
        if (items.includes('bad')) throw new Error('bad item');
      },
      { maxInFlight: 1 },
    );
    const settling = Promise.allSettled(['first', 'a', 'bad', 'b'].map((item) => write(item)));
    open();
    const results = await settling;
    expect(results.map((result) => result.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
  });
});
