// The owner's marks on a submission: "not spam" (ham) and "spam". A mark always does what the owner
// asked of the message (not spam: a held submission is queued and emailed), and is taught to the
// spam filter now while the key's hourly allowance lasts, later otherwise
// (src/shared/spam/spam-teaching.ts). Every mark can be reversed by the other. Each mark is also the
// owner's mailbox's vote on spam campaigns (src/shared/spam/spam-campaigns.ts).
import type { EntityManager } from '@mikro-orm/postgresql';
import type { SpamMark } from '../../shared/words/spam-kinds.ts';
import type { Submission } from '../../shared/submissions/entities.ts';
import { spamMarks } from '../../shared/infra/metrics.ts';
import { submissionJob, webhookJob } from '../../shared/deliveries/delivery-jobs.ts';
import { recordCampaignVote } from '../../shared/spam/spam-campaigns.ts';
import { allowanceLeft, takePlace, teachMark } from '../../shared/spam/spam-teaching.ts';
import { inTransaction } from '../../shared/infra/db/transactions.ts';
import { releaseSkippedWebhooks, writeSpamMark } from '../../shared/deliveries/deliveries.ts';
import { loadSubmissionKey, reloadSubmission } from '../../shared/submissions/submissions.ts';
import { errors } from '../api-errors.ts';
import type { AppContext, AppDeps } from '../context.ts';
import { enqueueCommitted } from '../submissions/enqueue.ts';
import { ownedSubmission } from './access.ts';
import { clearFinishedJob } from '../finished-jobs.ts';

/** How long teaching may take before the owner's answer goes without it. */
const TEACH_TIMEOUT_MS = 3_000;

/**
 * taught: the filter learned it; known: nothing to learn (learned before, or too short); capped: past
 * the key's hourly allowance, taught later; failed: the filter could not be reached, taught later;
 * off: no filter is configured.
 */
export type TeachOutcome = 'taught' | 'known' | 'capped' | 'failed' | 'off';

export type MarkResult = { submission: Submission; teaching: TeachOutcome; released: boolean };

/** Marks the owner's submission; undefined when it is not the owner's. */
export async function markSubmission(ctx: AppContext, deps: AppDeps, email: string, id: string, mark: SpamMark): Promise<MarkResult | undefined> {
  const em = ctx.state.em;
  const submission = await ownedSubmission(em, email, id);
  if (!submission) return undefined;
  // The owner's own test teaches the filter nothing about visitors.
  if (submission.test) throw errors.invalidFields({ mark: ['A test message cannot be marked: it teaches the spam filter nothing.'] });
  await loadSubmissionKey(em, submission);

  // The same mark again: taught already, or waiting its turn.
  const again = submission.spamMark === mark ? (submission.spamTaughtAt ? 'known' : 'capped') : undefined;
  const { reserved, released } = await recordMark(em, deps, submission, mark);
  let teaching: TeachOutcome = !deps.spamFilter ? 'off' : reserved ? 'taught' : (again ?? 'capped');
  if (reserved && deps.spamFilter) {
    // A fresh unit of work: it reads the mark as just written, not the request's loaded copy.
    teaching = await teachMark(em.fork(), deps.spamFilter, teachingSettings(deps), id, ctx.state.log);
  }
  spamMarks.inc({ mark, outcome: teaching });
  if (released) {
    // The job that held it finished under the row's id: a new one with that id would be a no-op.
    await clearFinishedJob(deps.queue, id).catch((error: unknown) => ctx.state.log.warn({ err: error }, 'could not clear the finished job'));
    await enqueueCommitted(ctx, deps, submissionJob(id, ctx.state.requestId));
    // The webhook events held back with it go out now, with the owner's mark.
    for (const deliveryId of await releaseSkippedWebhooks(em, id)) {
      await clearFinishedJob(deps.webhookQueue, deliveryId).catch((error: unknown) => ctx.state.log.warn({ err: error }, 'could not clear the finished job'));
      await enqueueCommitted(ctx, deps, webhookJob(deliveryId, ctx.state.requestId));
    }
  }
  ctx.state.log.info({ submissionId: id, mark, teaching, released }, 'owner marked a submission');
  await reloadSubmission(em, submission);
  return { submission, teaching, released };
}

/**
 * Writes the mark, in one transaction under a lock per key (so two marks at once cannot both take
 * the last of the allowance): reserves a place in the allowance (a teaching, and spam_taught_at
 * pending until the filter answers; given back if teaching fails), and queues a submission held as
 * spam that the owner says is not. A reversal past the allowance waits untaught, and the place of
 * the mark it reverses stays taken. The mark's campaign vote is written (or turned over) with it.
 */
async function recordMark(em: EntityManager, deps: AppDeps, submission: Submission, mark: SpamMark): Promise<{ reserved: boolean; released: boolean }> {
  return inTransaction(em, async (tx) => {
    const left = await allowanceLeft(tx, submission.key.id, deps.config.SPAM_TEACH_PER_KEY_PER_HOUR);
    const reserved = deps.spamFilter !== undefined && left > 0 && submission.spamMark !== mark;
    const released = await writeSpamMark(tx, submission.id, mark, reserved);
    if (reserved) await takePlace(tx, submission.key.id, submission.id, mark);
    // Whatever the allowance: a campaign vote teaches the filter nothing, and counts once per mailbox.
    await recordCampaignVote(tx, { submissionId: submission.id, mailbox: submission.key.mailbox, mark, message: submission.message });
    return { reserved, released };
  });
}

function teachingSettings(deps: AppDeps) {
  return { mailFrom: deps.config.MAIL_FROM, perKeyPerHour: deps.config.SPAM_TEACH_PER_KEY_PER_HOUR, timeoutMs: TEACH_TIMEOUT_MS };
}
