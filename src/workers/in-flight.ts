// Counts the jobs this worker process is running, so that its shutdown can say what it waits for
// and know when nothing is left.
import type { Processor } from 'bullmq';

export type JobCounter = {
  /** Jobs started and not yet finished, over every processor wrapped by `counted`. */
  readonly active: number;
  counted<T, R>(processor: Processor<T, R>): Processor<T, R>;
  /** Resolves once no job is running. */
  idle(): Promise<void>;
};

export function createJobCounter(): JobCounter {
  let active = 0;
  const waiters: Array<() => void> = [];
  return {
    get active() {
      return active;
    },
    counted:
      <T, R>(processor: Processor<T, R>): Processor<T, R> =>
      async (...args) => {
        active += 1;
        try {
          return await processor(...args);
        } finally {
          active -= 1;
          if (active === 0) for (const resolve of waiters.splice(0)) resolve();
        }
      },
    idle: () => (active === 0 ? Promise.resolve() : new Promise<void>((resolve) => waiters.push(resolve))),
  };
}
