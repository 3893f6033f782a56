// POST /api/contact-api/ — what happens to a submission, in order:
// rate limit → parse (files stream to storage) → validate → authenticate → store → enqueue
// → (optionally wait for the delivery) → respond.
import { randomUUID } from 'node:crypto';
import Router from '@koa/router';
import type { VerificationKey } from '../../shared/db/entities.ts';
import { enqueueDeliveryFast, submissionJob } from '../../shared/queue.ts';
import type { AppContext, AppDeps, AppState } from '../context.ts';
import { ApiError } from '../errors.ts';
import { formCors, preflight } from '../middleware/form-cors.ts';
import { rateLimit } from '../middleware/rate-limit.ts';
import { authenticateKey } from '../submissions/authenticate.ts';
import { readSubmissionBody, type SubmissionBody } from '../submissions/body.ts';
import { requestDomain } from '../submissions/domains.ts';
import { parseSubmissionFields } from '../submissions/input.ts';
import { DEFAULT_ERROR_PATH, DEFAULT_SUCCESS_PATH, isBrowserFormPost, redirectTarget, withQuery } from '../submissions/redirect.ts';
import { saveSubmission, waitForDelivery } from '../submissions/store.ts';

export const SUBMISSION_PATH = '/api/contact-api/';

export function submissionRoutes(deps: AppDeps, limiter: ReturnType<typeof rateLimit>): Router<AppState> {
  const router = new Router<AppState>();

  router.options(SUBMISSION_PATH, formCors, preflight);

  router.post(SUBMISSION_PATH, formCors, limiter, async (ctx) => {
    const submissionId = randomUUID();
    let body: SubmissionBody | undefined;
    let key: VerificationKey | undefined;
    let saved = false;
    try {
      body = await readSubmissionBody(ctx, deps.storage, submissionId);
      const input = parseSubmissionFields(body.fields);
      const domain = requestDomain(ctx.get('Origin'), ctx.get('Referer'));
      const em = deps.orm.em.fork();
      key = await authenticateKey(em, deps.vault, input.accessKey, domain);

      const submission = await saveSubmission(em, {
        id: submissionId,
        key,
        input,
        files: body.files,
        clientIp: ctx.state.clientIp,
        origin: ctx.get('Origin') || ctx.get('Referer') || undefined,
      });
      saved = true;

      if (submission.emailStatus === 'queued') {
        // Committed already: if Redis fails now, the reconciler enqueues the submission later.
        await enqueueDeliveryFast(deps.queue, deps.redis, submissionJob(submission.id)).catch((error: unknown) =>
          ctx.state.log.warn({ err: error, submissionId }, 'enqueue failed; left for the reconciler'),
        );
      }

      // With EMAIL_STATUS_WAIT_MS the answer can carry the delivery's outcome instead of `queued`.
      const emailStatus =
        submission.emailStatus === 'queued' && deps.config.EMAIL_STATUS_WAIT_MS > 0
          ? await waitForDelivery(em, submission.id, deps.config.EMAIL_STATUS_WAIT_MS)
          : submission.emailStatus;

      if (isBrowserFormPost(ctx)) {
        const target = redirectTarget(input.successUrl, DEFAULT_SUCCESS_PATH, key);
        redirect(ctx, withQuery(target, 'submission_id', submission.id));
        return;
      }
      ctx.body = {
        success: true,
        message: 'Message sent successfully.',
        submission_id: submission.id,
        attachments: body.files.length,
        email_status: emailStatus,
      };
    } catch (error) {
      // A refused request leaves nothing behind: the files stored while reading it go too.
      if (!saved && body?.files.length) await removeFiles(ctx, deps, body.files.map((file) => file.storageKey));
      // The body may be unread (a limit stopped it): close the connection rather than drain it.
      if (!ctx.req.complete) ctx.set('Connection', 'close');
      if (error instanceof ApiError && isBrowserFormPost(ctx)) {
        const requested = body?.fields.find(([name]) => name === 'error_url')?.[1];
        const target = redirectTarget(typeof requested === 'string' ? requested : undefined, DEFAULT_ERROR_PATH, key);
        redirect(ctx, withQuery(target, 'error', error.message));
        return;
      }
      throw error;
    }
  });

  return router;
}

/** 303 See Other: the browser follows with a GET. */
function redirect(ctx: AppContext, location: string): void {
  ctx.redirect(location);
  ctx.status = 303;
}

async function removeFiles(ctx: AppContext, deps: AppDeps, keys: string[]): Promise<void> {
  await deps.storage.remove(keys).catch((error: unknown) =>
    ctx.state.log.error({ err: error, keys }, 'could not delete the files of a refused submission'),
  );
}
