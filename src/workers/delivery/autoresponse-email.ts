// The autoresponse job: the confirmation email to a visitor (src/shared/autoresponses), sent like
// every email of this service (claim, send, record; retried on its own), with a return path of its
// own so that what comes back counts against the visitor's address. Its outcome is written on the
// submission's `autoresponse` field, never on the submission's own email status.
import { UnrecoverableError, type Job, type Queue } from 'bullmq';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from '../../shared/infra/log.ts';
import { autoresponses } from '../../shared/infra/metrics.ts';
import { enqueueDelivery } from '../../shared/infra/queues/queues.ts';
import {
  decideAutoresponse,
  findAutoresponseToSend,
  renderAutoresponse,
  setOutcomeOfAutoresponse,
  type AutoresponseOutcome,
} from '../../shared/autoresponses/autoresponses.ts';
import { submissionSuppression } from '../../shared/bounces/suppression.ts';
import { autoresponseJob, type DeliveryJob, type DeliveryJobs } from '../../shared/submissions/delivery-jobs.ts';
import { messageIdFor } from '../../shared/submissions/delivery-kinds.ts';
import { claimOnly, sendTracked, SuppressedError, type SendContext, type SendOutcome } from './send.ts';

/** What the autoresponse needs of the configuration. */
export type AutoresponseSettings = { mailFrom: string };

type AutoresponseContext = SendContext & AutoresponseSettings;

export async function deliverAutoresponse(context: AutoresponseContext, job: Job<DeliveryJobs['autoresponse']>): Promise<SendOutcome> {
  const { autoresponseId } = job.data;
  let outcome: SendOutcome;
  // Not attempted because the owner took it back: the submission says `off`, not `suppressed`.
  const taken = { back: false };
  try {
    outcome = await sendTracked(context, 'autoresponse', autoresponseId, job, claimOnly(context, 'autoresponse', autoresponseId), async () => {
      const row = await findAutoresponseToSend(context.em, autoresponseId);
      if (!row) throw new UnrecoverableError(`autoresponse ${autoresponseId} is gone`);
      // Turned off, or emptied, since it was decided: nothing the owner no longer wants goes out.
      if (!row.enabled || !row.subject || !row.text) {
        taken.back = true;
        throw new SuppressedError("not attempted: the key's autoresponse was turned off before it went out");
      }
      // A bounce or a complaint may have come back since it was decided.
      const suppressed = submissionSuppression({ complained: row.complained, suppressedUntil: row.suppressed_until });
      if (suppressed) throw new SuppressedError(suppressed);
      const email = renderAutoresponse({ subject: row.subject, text: row.text, label: row.label, receivedAt: row.received_at });
      return {
        message: {
          from: context.mailFrom,
          to: row.email,
          replyTo: row.owner_email,
          subject: email.subject,
          text: email.text,
          html: email.html,
          messageId: messageIdFor('autoresponse', autoresponseId, context.mailFrom),
          // RFC 3834: an automatic reply; well-behaved responders do not answer it.
          headers: { 'Auto-Submitted': 'auto-replied' },
        },
      };
    });
  } catch (error) {
    if (error instanceof UnrecoverableError) await settle(context, autoresponseId, 'failed');
    throw error;
  }
  if (outcome === 'sent' || outcome === 'suppressed') await settle(context, autoresponseId, taken.back ? 'off' : outcome);
  return outcome;
}

async function settle(context: { em: EntityManager }, autoresponseId: string, outcome: AutoresponseOutcome): Promise<void> {
  await setOutcomeOfAutoresponse(context.em, autoresponseId, outcome);
  autoresponses.inc({ outcome });
}

/**
 * After the owner's email was sent or settled: decides the submission's autoresponse and enqueues
 * it. Its failure is logged and passed over, never the owner email's: a submission left undecided
 * gets no autoresponse.
 */
export async function followWithAutoresponse(
  context: { em: EntityManager; queue: Queue<DeliveryJob>; log: Logger },
  submissionId: string,
  requestId: string | undefined,
): Promise<void> {
  try {
    const decision = await decideAutoresponse(context.em, submissionId);
    if (!decision) return;
    autoresponses.inc({ outcome: decision.outcome });
    if (decision.autoresponseId) await enqueueDelivery(context.queue, autoresponseJob(decision.autoresponseId, requestId));
  } catch (error) {
    // A row decided but not enqueued is `queued`: the reconciler enqueues it.
    context.log.warn({ err: error, submissionId }, 'the autoresponse of this submission could not be decided or enqueued');
  }
}
