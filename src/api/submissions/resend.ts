// A submission's email sent again on request, by its owner (the console) or an operator (/admin);
// and one added recipient's copy of it, on its own.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Submission } from '../../shared/submissions/entities.ts';
import { requeueFailed } from '../../shared/deliveries/deliveries.ts';
import { recipientCopyJob, submissionJob, type DeliveryRequest } from '../../shared/deliveries/delivery-jobs.ts';
import { findCopyOfSubmission } from '../../shared/recipients/recipients.ts';
import type { AppContext, AppDeps } from '../context.ts';
import { enqueueCommitted } from './enqueue.ts';
import { ApiError } from '../api-errors.ts';
import { clearFinishedJob } from '../finished-jobs.ts';

/**
 * Puts a failed, bounced or suppressed submission back in the queue (409 for any other), as the
 * queue dashboard's retry does: the row becomes `queued` (so the reconciler picks it up if the
 * enqueue is lost) and a job is added. The owner's re-send and the operator's. A suppressed
 * mailbox stays so until its owner signs in.
 */
export async function resendSubmission(ctx: AppContext, deps: AppDeps, em: EntityManager, submission: Submission): Promise<void> {
  if (!(await requeueFailed(em, 'submission', submission.id))) {
    const message = `Only a failed, bounced or suppressed email can be re-sent; this one is ${submission.emailStatus}.`;
    throw new ApiError(409, 'not_failed', message, { __all__: [message] });
  }
  await requeued(ctx, deps, submissionJob(submission.id, ctx.state.requestId));
}

/**
 * Puts one recipient's failed, bounced or suppressed copy of the submission back in the queue, the
 * same way: the owner's email and the other copies are left as they are. 409 for a copy in any
 * other status, or to an address removed from the key since; false when the submission has no such copy.
 */
export async function resendCopy(ctx: AppContext, deps: AppDeps, em: EntityManager, submission: Submission, copyId: string): Promise<boolean> {
  const copy = await findCopyOfSubmission(em, submission.id, copyId);
  if (!copy) return false;
  if (copy.removed) {
    const message = "This address is no longer one of the key's recipients: add it again, and it receives the messages that come after it confirms.";
    throw new ApiError(409, 'not_a_recipient', message, { __all__: [message] });
  }
  if (!(await requeueFailed(em, 'recipient-copy', copyId, submission.key.id))) {
    const message = `Only a failed, bounced or suppressed copy can be re-sent; this one is ${copy.email_status}.`;
    throw new ApiError(409, 'not_failed', message, { __all__: [message] });
  }
  await requeued(ctx, deps, recipientCopyJob(copyId, ctx.state.requestId));
  return true;
}

async function requeued(ctx: AppContext, deps: AppDeps, job: DeliveryRequest): Promise<void> {
  // A Redis outage leaves the row queued without a job: the reconciler enqueues it later.
  await clearFinishedJob(deps.queue, job.rowId).catch((error: unknown) => ctx.state.log.warn({ err: error }, 'could not clear the finished job'));
  await enqueueCommitted(ctx, deps, job);
}
