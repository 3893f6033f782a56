// The autoresponse job: the confirmation email to a visitor (src/shared/autoresponses), sent like
// every email of this service (claim, send, record; retried on its own), with a return path of its
// own so that what comes back counts against the visitor's address. Its outcome is written on the
// submission's `autoresponse` field, never on the submission's own email status. Just before it
// goes, the operator's and the owner's settings are read again and the owner's text checked as
// mail: what was allowed when it was decided may not be any more.
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
  type AutoresponsePolicy,
  type AutoresponseToSend,
} from '../../shared/autoresponses/autoresponses.ts';
import { linkRefusal } from '../../shared/autoresponses/text-check.ts';
import type { AutoresponseTextVerdicts } from './autoresponse-text-verdicts.ts';
import { submissionSuppression } from '../../shared/bounces/suppression.ts';
import { autoresponseJob, type DeliveryJob, type DeliveryJobs } from '../../shared/deliveries/delivery-jobs.ts';
import { messageIdFor } from '../../shared/deliveries/delivery-kinds.ts';
import { claimOnly, sendTracked, SuppressedError, type SendContext, type SendOutcome } from './send.ts';

/** What the autoresponse needs of the configuration, and the spam filter's word on owners' texts. */
export type AutoresponseSettings = { policy: AutoresponsePolicy; textVerdicts: AutoresponseTextVerdicts };

type AutoresponseContext = SendContext & { mailFrom: string; autoresponse: AutoresponseSettings };

/** Why an autoresponse decided earlier may not go now, or the owner's words it goes with. */
async function checkBeforeSending(
  row: AutoresponseToSend,
  settings: AutoresponseSettings,
): Promise<{ outcome: AutoresponseOutcome; why: string } | { subject: string; text: string }> {
  // Turned off, or emptied, since it was decided: nothing the owner no longer wants goes out.
  if (!row.enabled || !row.subject || !row.text) return { outcome: 'off', why: "the key's autoresponse was turned off before it went out" };
  if (settings.policy.mode === 'off' || row.review === 'blocked') return { outcome: 'operator_off', why: 'the operator turned autoresponses off' };
  if (settings.policy.mode === 'approval' && row.review !== 'approved')
    return { outcome: 'not_approved', why: "the key's autoresponse awaits the operator's approval" };
  const text = { subject: row.subject, text: row.text, ownerEmail: row.owner_email, ownerMailbox: row.owner_mailbox };
  const refused = linkRefusal(text, row.domains) ?? (await settings.textVerdicts.refusal(text));
  return refused ? { outcome: 'text_refused', why: refused.message } : { subject: row.subject, text: row.text };
}

export async function deliverAutoresponse(context: AutoresponseContext, job: Job<DeliveryJobs['autoresponse']>): Promise<SendOutcome> {
  const { autoresponseId } = job.data;
  let outcome: SendOutcome;
  // Not attempted because the owner or the operator took it back, or its text failed its check: the
  // submission says why, not `suppressed`.
  const taken: { back?: AutoresponseOutcome } = {};
  try {
    outcome = await sendTracked(context, 'autoresponse', autoresponseId, job, claimOnly(context, 'autoresponse', autoresponseId), async () => {
      const row = await findAutoresponseToSend(context.em, autoresponseId);
      if (!row) throw new UnrecoverableError(`autoresponse ${autoresponseId} is gone`);
      const checked = await checkBeforeSending(row, context.autoresponse);
      if ('why' in checked) {
        taken.back = checked.outcome;
        throw new SuppressedError(`not attempted: ${checked.why}`);
      }
      // A bounce or a complaint may have come back since it was decided.
      const suppressed = submissionSuppression({ complained: row.complained, suppressedUntil: row.suppressed_until });
      if (suppressed) throw new SuppressedError(suppressed);
      const email = renderAutoresponse({ ...checked, label: row.label, receivedAt: row.received_at });
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
  if (outcome === 'sent' || outcome === 'suppressed') await settle(context, autoresponseId, taken.back ?? outcome);
  return outcome;
}

async function settle(context: { em: EntityManager }, autoresponseId: string, outcome: AutoresponseOutcome): Promise<void> {
  await setOutcomeOfAutoresponse(context.em, autoresponseId, outcome);
  autoresponses.inc({ outcome });
}

/**
 * After the owner's email was sent or settled: decides the submission's autoresponse and enqueues
 * it. Its failure is logged and passed over, never the owner email's: a submission left undecided
 * whose email was sent is decided by the reconciler (src/workers/housekeeping/unfinished-fan-outs.ts),
 * any other gets no autoresponse.
 */
export async function followWithAutoresponse(
  context: { em: EntityManager; queue: Queue<DeliveryJob>; log: Logger; autoresponse: Pick<AutoresponseSettings, 'policy'> },
  submissionId: string,
  requestId: string | undefined,
): Promise<void> {
  try {
    const decision = await decideAutoresponse(context.em, submissionId, context.autoresponse.policy);
    if (!decision) return;
    autoresponses.inc({ outcome: decision.outcome });
    if (decision.autoresponseId) await enqueueDelivery(context.queue, autoresponseJob(decision.autoresponseId, requestId));
  } catch (error) {
    // A row decided but not enqueued is `queued`: the reconciler enqueues it.
    context.log.warn({ err: error, submissionId }, 'the autoresponse of this submission could not be decided or enqueued');
  }
}
