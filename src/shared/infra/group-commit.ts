// Group commit: concurrent callers share one write. The calls of one turn of the event loop go
// together at its end; calls that arrive while `maxInFlight` writes are under way wait and go
// together in the next one (at most `maxBatch` items). Each caller's promise settles only when the
// write that carried its item has settled, so "resolved" still means "written". When a shared write fails, each of its items is
// written again on its own: one bad item fails only its own caller. A write may return one result
// per item, in the items' order: each caller receives its own (a batched claim, say).
// With `lingerMs`, a write that could start waits until its oldest item is that old (or the batch
// is full), so that items arriving one at a time still share writes; nothing waits longer.
export type GroupCommit<T, R = void> = (item: T) => Promise<R>;

type Waiting<T, R> = { item: T; since: number; resolve: (result: R) => void; reject: (error: unknown) => void };

export function groupCommit<T, R = void>(
  write: ((items: T[]) => Promise<R[]>) | ((items: T[]) => Promise<void>),
  options: { maxBatch?: number; maxInFlight?: number; lingerMs?: number } = {},
): GroupCommit<T, R> {
  const { maxBatch = 200, maxInFlight = 2, lingerMs = 0 } = options;
  let waiting: Array<Waiting<T, R>> = [];
  let inFlight = 0;
  let lingering: ReturnType<typeof setTimeout> | undefined;
  let gathering = false;

  async function run(batch: Array<Waiting<T, R>>): Promise<void> {
    try {
      const results = await write(batch.map((entry) => entry.item));
      batch.forEach((entry, index) => entry.resolve(results?.[index] as R));
    } catch (error) {
      if (batch.length === 1) batch[0]!.reject(error);
      else await Promise.all(batch.map((entry) => write([entry.item]).then((results) => entry.resolve(results?.[0] as R), entry.reject)));
    }
  }

  /**
   * A write starts once the current turn of the event loop is over, not at the first call: the
   * callers woken together (by one Redis reply, one socket read) then share it, where the first
   * would have gone alone and the others behind it.
   */
  function next(): void {
    if (gathering || inFlight >= maxInFlight || waiting.length === 0) return;
    gathering = true;
    setImmediate(() => {
      gathering = false;
      start();
    });
  }

  function start(): void {
    while (inFlight < maxInFlight && waiting.length > 0) {
      // Without a linger (the API's intake, the `sent` writes) no clock is read at all.
      const wait = lingerMs > 0 ? lingerMs - (performance.now() - waiting[0]!.since) : 0;
      if (wait > 0 && waiting.length < maxBatch) {
        lingering ??= setTimeout(() => {
          lingering = undefined;
          start();
        }, wait);
        return;
      }
      const batch = waiting.slice(0, maxBatch);
      waiting = waiting.slice(batch.length);
      inFlight += 1;
      void run(batch).finally(() => {
        inFlight -= 1;
        next();
      });
    }
  }

  return (item) =>
    new Promise<R>((resolve, reject) => {
      waiting.push({ item, since: lingerMs > 0 ? performance.now() : 0, resolve, reject });
      next();
    });
}
