// A submission's email sent again on request, by its owner (the console) or an operator (/admin).
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Submission } from '../../shared/submissions/entities.ts';
import { requeueFailed } from '../../shared/submissions/data/delivery-status.ts';
import { submissionJob } from '../../shared/submissions/delivery-jobs.ts';
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
  // A Redis outage leaves the row queued without a job: the reconciler enqueues it later.
  await clearFinishedJob(deps.queue, submission.id).catch((error: unknown) => ctx.state.log.warn({ err: error }, 'could not clear the finished job'));
  await enqueueCommitted(ctx, deps, submissionJob(submission.id, ctx.state.requestId));
}
