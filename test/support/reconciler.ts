// One run of the reconciler, as a worker's housekeeping queue runs it (same settings), awaited by
// the test: once it returns, whatever the reconciler would do about the rows of that moment is done
// or enqueued, so a test can then say that it did nothing.
import { createLogger } from '../../src/shared/infra/log.ts';
import { periodicJobs } from '../../src/workers/housekeeping/housekeeping.ts';
import type { Harness } from './harness.ts';

/** Runs the reconciler once against the harness's database and queues; returns how many rows it enqueued again. */
export async function runReconciler(h: Harness): Promise<number> {
  const job = periodicJobs.find((candidate) => candidate.name === 'reconcile');
  if (!job) throw new Error('no periodic job named reconcile');
  const { orm, storage, queue, webhookQueue } = h.api.deps;
  return job.run({ orm, storage, queues: { email: queue, webhook: webhookQueue }, config: h.config, log: createLogger('test', 'silent') });
}
