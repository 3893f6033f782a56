// Group commit: concurrent callers share one write. The first call is written at once; calls that
// arrive while `maxInFlight` writes are under way wait and go together in the next one (at most
// `maxBatch` items). Each caller's promise settles only when the write that carried its item has
// settled, so "resolved" still means "written". When a shared write fails, each of its items is
// written again on its own: one bad item fails only its own caller.
export type GroupCommit<T> = (item: T) => Promise<void>;

type Waiting<T> = { item: T; resolve: () => void; reject: (error: unknown) => void };

export function groupCommit<T>(write: (items: T[]) => Promise<void>, options: { maxBatch?: number; maxInFlight?: number } = {}): GroupCommit<T> {
  const { maxBatch = 200, maxInFlight = 2 } = options;
  let waiting: Array<Waiting<T>> = [];
  let inFlight = 0;

  async function run(batch: Array<Waiting<T>>): Promise<void> {
    try {
      await write(batch.map((entry) => entry.item));
      for (const entry of batch) entry.resolve();
    } catch (error) {
      if (batch.length === 1) batch[0]!.reject(error);
      else await Promise.all(batch.map((entry) => write([entry.item]).then(entry.resolve, entry.reject)));
    }
  }

  function next(): void {
    while (inFlight < maxInFlight && waiting.length > 0) {
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
    new Promise<void>((resolve, reject) => {
      waiting.push({ item, resolve, reject });
      next();
    });
}
