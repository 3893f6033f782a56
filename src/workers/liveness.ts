// A worker's liveness (/livez): stuck when jobs wait and it has started or finished none for
// WORKER_STALL_MS. A Redis outage is not the worker's fault: unanswered, it counts as alive.
import type { Queue } from 'bullmq';

export type Liveness = {
  /** Called on every job started or finished. */
  touch: () => void;
  alive: () => Promise<boolean>;
};

export function createLiveness(stallMs: number, queues: Queue[]): Liveness {
  let lastActivity = Date.now();
  const touch = () => {
    lastActivity = Date.now();
  };
  const alive = async () => {
    if (Date.now() - lastActivity < stallMs) return true;
    let waiting = 0;
    try {
      for (const queue of queues) waiting += await queue.getJobCountByTypes('wait', 'prioritized');
    } catch {
      return true;
    }
    if (waiting === 0) touch();
    return waiting === 0;
  };
  return { touch, alive };
}
