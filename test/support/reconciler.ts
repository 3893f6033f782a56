// One run of a worker's periodic job (the reconciler, the spam filter's teach-later run, …), as a
// worker's housekeeping queue runs it (same settings), awaited by the test: once it returns,
// whatever that job would do about the rows of that moment is done or enqueued, so a test can then
// say that it did nothing.
import { createLogger } from '../../src/shared/infra/log.ts';
import { periodicJobs } from '../../src/workers/housekeeping/housekeeping.ts';
import type { Harness } from './harness.ts';

/** Runs the periodic job `name` once against the harness's database and queues; returns what it counted. */
export async function runPeriodicJob(h: Harness, name: string): Promise<number> {
  const job = periodicJobs.find((candidate) => candidate.name === name);
  if (!job) throw new Error(`no periodic job named ${name}`);
  const { orm, storage, queue, webhookQueue } = h.api.deps;
  return job.run({ orm, storage, queues: { email: queue, webhook: webhookQueue }, config: h.config, log: createLogger('test', 'silent') });
}

/** Runs the reconciler once; returns how many rows it enqueued again. */
export const runReconciler = (h: Harness): Promise<number> => runPeriodicJob(h, 'reconcile');
