// /owner/api/keys/:keyId/submissions, /owner/api/submissions/:id — a key's messages as JSON (a page
// at a time, filtered, or all as CSV), and each message: read, its files, re-send (its email, or one
// added recipient's copy), mark, delete.
import type Router from '@koa/router';
import type { AppDeps, AppState } from '../context.ts';
import { errors } from '../api-errors.ts';
import { jsonObjectBody } from '../middleware/json-body.ts';
import { createRouter } from '../router.ts';
import { validate } from '../validate.ts';
import { ListFilterSchema } from './filters.ts';
import { deleteOwnerSubmission, getOwnerSubmission, notFound, resendOwnerCopy, resendOwnerSubmission, sendOwnerCsv, sendOwnerFile } from './operations.ts';
import { listKeySubmissions, markSpamOrHam } from './owner-api-submission-handlers.ts';
import { apiGuards, optionalJsonBody, ownerEmail, ownerState } from './session.ts';

export { SpamMarkSchema } from './owner-api-submission-handlers.ts';

export function ownerApiSubmissionRoutes(deps: AppDeps): Router<AppState> {
  const router = createRouter('/owner/api');
  const { signedIn, write } = apiGuards(deps);
  const json = jsonObjectBody(() => errors.unsupportedMediaType(['application/json']));

  router.get('/keys/:keyId/submissions', signedIn, (ctx) => listKeySubmissions(ctx, deps));

  router.get('/keys/:keyId/submissions.csv', signedIn, async (ctx) => {
    const filters = validate(ListFilterSchema, { ...ctx.query });
    if (!(await sendOwnerCsv(ctx, deps, ownerState(ctx).owner!, ctx.params.keyId ?? '', filters))) throw notFound();
  });

  router.get('/submissions/:id', signedIn, async (ctx) => {
    const record = await getOwnerSubmission(ctx.state.em, deps, ownerEmail(ctx), ctx.params.id ?? '');
    if (!record) throw notFound();
    ctx.set('Cache-Control', 'no-store');
    ctx.body = record;
  });

  router.get('/submissions/:id/files/:fileId', signedIn, async (ctx) => {
    if (!(await sendOwnerFile(ctx, deps, ownerEmail(ctx), ctx.params.id ?? '', ctx.params.fileId ?? ''))) throw notFound();
  });

  router.post('/submissions/:id/resend', ...write, optionalJsonBody, async (ctx) => {
    const record = await resendOwnerSubmission(ctx, deps, ownerEmail(ctx), ctx.params.id ?? '');
    if (!record) throw notFound();
    ctx.body = record;
  });

  router.post('/submissions/:id/copies/:copyId/resend', ...write, optionalJsonBody, async (ctx) => {
    const record = await resendOwnerCopy(ctx, deps, ownerEmail(ctx), ctx.params.id ?? '', ctx.params.copyId ?? '');
    if (!record) throw notFound();
    ctx.body = record;
  });

  router.post('/submissions/:id/spam-mark', ...write, json, (ctx) => markSpamOrHam(ctx, deps));

  router.delete('/submissions/:id', ...write, async (ctx) => {
    if (!(await deleteOwnerSubmission(ctx.state.em, deps, ownerEmail(ctx), ctx.params.id ?? ''))) throw notFound();
    ctx.status = 204;
  });

  return router;
}
