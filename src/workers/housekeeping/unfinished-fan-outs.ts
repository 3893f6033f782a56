// The reconciler's step for the submissions whose owner's email a worker of the previous release
// sent, during a rolling upgrade: that release makes no copies to the key's added recipients and
// decides no autoresponse, which a worker of this one does once the spam check let the email
// through. Their mark: the email went out and the submission has no autoresponse outcome (this
// release writes one with `sent`, or decides it right after). This step does what that worker would
// have: the copies (made once per recipient, whoever comes first) and their jobs, then the
// autoresponse decided with all its rules and bounds (once: under the submission's lock, only
// while its outcome is still null), which also marks the submission done.
import type { Queue } from 'bullmq';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from '../../shared/infra/log.ts';
import type { AutoresponsePolicy } from '../../shared/autoresponses/autoresponses.ts';
import { enqueueDelivery } from '../../shared/infra/queues/queues.ts';
import { copySubmission } from '../../shared/recipients/recipients.ts';
import { recipientCopyJob, type DeliveryJob } from '../../shared/deliveries/delivery-jobs.ts';
import { findUnfinishedFanOuts } from '../../shared/deliveries/deliveries.ts';
import { followWithAutoresponse } from '../delivery/autoresponse-email.ts';

/**
 * How far back: past the autoresponse's 24-hour bounds a reply would come late, and an upgrade takes
 * less. It also leaves out the rows sent before this release added the outcome.
 */
export const FAN_OUT_WITHIN_HOURS = 24;

/** Returns how many submissions were finished; at most `batch` per run, the oldest first. */
export async function finishFanOuts(
  em: EntityManager,
  queue: Queue<DeliveryJob>,
  log: Logger,
  options: { settledAfterMs: number; policy: AutoresponsePolicy },
  batch: number,
): Promise<number> {
  const submissions = await findUnfinishedFanOuts(em, options.settledAfterMs, FAN_OUT_WITHIN_HOURS, batch);
  let finished = 0;
  for (const { id } of submissions) {
    try {
      // Only the copies made now: those a worker made before have their jobs (or the reconciler adds them).
      for (const copyId of await copySubmission(em, id)) {
        await enqueueDelivery(queue, recipientCopyJob(copyId, undefined)).catch((error: unknown) =>
          log.warn({ err: error, copyId }, 'the job of a copy to an added recipient could not be added; left for the reconciler'),
        );
      }
      await followWithAutoresponse({ em, queue, log, autoresponse: { policy: options.policy } }, id, undefined);
      finished += 1;
    } catch (error) {
      // Nothing was decided: the submission is found again by the next run.
      log.debug({ err: error, id }, 'reconciler left a submission sent without its copies for the next run');
    }
  }
  return finished;
}
