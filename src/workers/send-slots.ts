// A worker's submission emails being sent at once: WORKER_CONCURRENCY, each from opening its
// files to the SMTP server's answer. With the spam filter on, a worker runs more jobs than that
// (./worker.ts): the jobs still waiting for their check hold no slot, so they leave no SMTP
// connection idle and no file open.
import { Sema } from 'async-sema';

export type SendSlots = {
  /** Waits for a free slot; the answer gives it back (once, however often it is called). */
  take: () => Promise<() => void>;
};

export function createSendSlots(count: number): SendSlots {
  const slots = new Sema(count);
  return {
    async take() {
      await slots.acquire();
      let held = true;
      return () => {
        if (!held) return;
        held = false;
        slots.release();
      };
    },
  };
}
