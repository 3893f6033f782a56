// The reconciler's step for the webhook and chat deliveries of submissions queued for email: the
// workers write those rows, each from its webhook job. When the API could not queue that job (Redis
// down at intake, or its data lost), the claim of the submission's email writes the row too, but
// that claim waits for the SMTP relay. So this step finds the rows not written and enqueues their
// webhook jobs itself, the same job the API would have added: its worker writes the row (its id
// fixed by the submission and the endpoint, the insert idempotent) and delivers it, whatever the
// relay's state. Each delivery is still written once and sent once, whichever path comes first.
import type { Queue } from 'bullmq';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from '../../shared/infra/log.ts';
import { enqueueDelivery } from '../../shared/infra/queues/queues.ts';
import { createdEventJob, type DeliveryJob } from '../../shared/deliveries/delivery-jobs.ts';
import { createdEventId } from '../../shared/webhooks/created-event-id.ts';
import { findUnwrittenCreatedEvents, type UnwrittenCreatedEvents } from '../../shared/webhooks/webhooks.ts';
import { jobFates } from './job-fates.ts';

/** Returns how many webhook jobs were added; walks every such submission, `batch` at a time. */
export async function enqueueUnwrittenWebhooks(
  em: EntityManager,
  queue: Queue<DeliveryJob>,
  log: Logger,
  staleAfterMs: number,
  batch: number,
): Promise<number> {
  let enqueued = 0;
  let after: UnwrittenCreatedEvents | undefined;
  for (;;) {
    const submissions = await findUnwrittenCreatedEvents(em, staleAfterMs, batch, after);
    const deliveries = submissions.flatMap((submission) =>
      submission.endpoint_ids.map((endpointId) => ({ submissionId: submission.id, endpointId, id: createdEventId(submission.id, endpointId) })),
    );
    const fates = await jobFates(
      queue,
      deliveries.map((delivery) => delivery.id),
    );
    for (const [index, delivery] of deliveries.entries()) {
      // Only where there is no job: a pending one writes the row when it runs, and a finished one has
      // run (the row it wrote may have settled since this page was read: not to be sent again).
      if (fates[index] !== 'none') continue;
      try {
        await enqueueDelivery(queue, createdEventJob(delivery.submissionId, delivery));
        enqueued += 1;
      } catch (error) {
        log.debug({ err: error, id: delivery.id }, 'reconciler left a webhook delivery for the next run');
      }
    }
    if (submissions.length < batch) break;
    after = submissions[submissions.length - 1];
  }
  return enqueued;
}
