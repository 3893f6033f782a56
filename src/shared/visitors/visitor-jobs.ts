// The jobs that name a visitor's rows. Jobs carry ids only and a delivery's job id is its row's id
// (src/shared/infra/queues/queues.ts), so they are found by those ids, in each queue that holds
// deliveries.
import type { Queue } from 'bullmq';
import { createdEventId } from '../webhooks/created-event-id.ts';

export type VisitorQueues = ReadonlyArray<Pick<Queue, 'name' | 'getJob' | 'remove'>>;

export type JobRecord = { queue: string; id: string; name: string; state: string; data: unknown };

/** The ids of the jobs of these rows; for each submission and webhook endpoint of its key, the id its `submission.created` delivery has (written or not). */
export function jobIdsOf(rowIds: readonly string[], endpoints: ReadonlyArray<{ submission_id: string; endpoint_id: string }>): string[] {
  return [...new Set([...rowIds, ...endpoints.map((pair) => createdEventId(pair.submission_id, pair.endpoint_id))])];
}

const BATCH = 200;

/** The jobs with these ids, in every queue, with their state: what an export shows. */
export async function findJobs(queues: VisitorQueues, ids: readonly string[]): Promise<JobRecord[]> {
  const found: JobRecord[] = [];
  for (let start = 0; start < ids.length; start += BATCH) {
    const batch = ids.slice(start, start + BATCH);
    for (const queue of queues) {
      const jobs = await Promise.all(batch.map((id) => queue.getJob(id)));
      for (const job of jobs) {
        if (!job?.id) continue;
        found.push({ queue: queue.name, id: job.id, name: job.name, state: await job.getState(), data: job.data });
      }
    }
  }
  return found;
}

/**
 * Removes the jobs with these ids from every queue. A job a worker holds at this moment cannot be
 * removed: it finds its row gone and ends; `busy` counts those.
 */
export async function removeJobs(queues: VisitorQueues, ids: readonly string[]): Promise<{ removed: number; busy: number }> {
  let removed = 0;
  let busy = 0;
  for (let start = 0; start < ids.length; start += BATCH) {
    const batch = ids.slice(start, start + BATCH);
    for (const queue of queues) {
      const results = await Promise.all(
        batch.map(async (id) => {
          if (!(await queue.getJob(id))) return 'none';
          return (await queue.remove(id)) ? 'removed' : 'busy';
        }),
      );
      removed += results.filter((result) => result === 'removed').length;
      busy += results.filter((result) => result === 'busy').length;
    }
  }
  return { removed, busy };
}
