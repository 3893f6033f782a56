// POST /api/contact-api/ (and POST /f/<key>, the key in the path): a submission, taken in by the
// intake (intake.ts), which lists its steps in order.
import type Router from '@koa/router';
import { createRouter } from '../router.ts';
import type { AppDeps, AppState } from '../context.ts';
import { formCors, preflight } from '../middleware/form-cors.ts';
import type { RateLimiter } from '../middleware/rate-limit.ts';
import type { Altcha } from './altcha.ts';
import { createIntake } from './intake.ts';

export const SUBMISSION_PATH = '/api/contact-api/';
/**
 * The same submission with the key in the path, as Formspree's and Basin's forms post: the path's
 * key becomes the `access_key` field and is authenticated exactly as one in the body is.
 */
export const KEYED_SUBMISSION_PATH = '/f/:access_key';

export function submissionRoutes(deps: AppDeps, limiter: RateLimiter, altcha: Altcha): Router<AppState> {
  const router = createRouter();
  const submit = createIntake(deps, limiter, altcha);

  router.options(SUBMISSION_PATH, formCors, preflight);
  router.options(KEYED_SUBMISSION_PATH, formCors, preflight);
  router.post(SUBMISSION_PATH, formCors, (ctx) => submit(ctx));
  router.post(KEYED_SUBMISSION_PATH, formCors, (ctx) => submit(ctx, ctx.params.access_key ?? ''));

  return router;
}
