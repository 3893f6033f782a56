// /owner/keys/:keyId/submissions, /owner/submissions/:id — a key's messages as a list to search
// and filter (and its Spam view, and the CSV of the list), and each message on a page of its own
// with its delivery status (its own, each added recipient's copy, each chat and webhook delivery),
// its files and what can be done with it: re-send (the email, or a copy), mark, delete.
import type Router from '@koa/router';
import type { AppDeps, AppState } from '../context.ts';
import { refusalsAsPage } from '../middleware/error-handler.ts';
import { createRouter } from '../router.ts';
import { validate } from '../validate.ts';
import { ListFilterSchema } from './filters.ts';
import { deleteOwnerSubmission, resendOwnerCopy, resendOwnerSubmission, sendOwnerCsv, sendOwnerFile } from './operations.ts';
import { notFoundPage, pageGuards, see } from './owner-pages.ts';
import { renderSubmissionList } from './owner-submission-list-page.ts';
import { renderSubmissionPage } from './owner-submission-page.ts';
import { ownerState } from './session.ts';
import { markFromForm } from './spam-mark-form.ts';

export function ownerSubmissionPages(deps: AppDeps): Router<AppState> {
  const router = createRouter();
  const { signedIn, write } = pageGuards(deps);
  router.use(refusalsAsPage('owner-error'));

  router.get('/owner/keys/:keyId/submissions', signedIn, (ctx) => renderSubmissionList(ctx, deps, false));
  router.get('/owner/keys/:keyId/spam', signedIn, (ctx) => renderSubmissionList(ctx, deps, true));

  router.get('/owner/keys/:keyId/submissions.csv', signedIn, async (ctx) => {
    const filters = validate(ListFilterSchema, { ...ctx.query });
    if (!(await sendOwnerCsv(ctx, deps, ownerState(ctx).owner!, ctx.params.keyId ?? '', filters))) notFoundPage(ctx);
  });

  router.get('/owner/submissions/:id', signedIn, (ctx) => renderSubmissionPage(ctx, deps));

  router.get('/owner/submissions/:id/files/:fileId', signedIn, async (ctx) => {
    const email = ownerState(ctx).owner!.email;
    if (!(await sendOwnerFile(ctx, deps, email, ctx.params.id ?? '', ctx.params.fileId ?? ''))) notFoundPage(ctx);
  });

  router.post('/owner/submissions/:id/resend', ...write, async (ctx) => {
    const record = await resendOwnerSubmission(ctx, deps, ownerState(ctx).owner!.email, ctx.params.id ?? '');
    if (!record) return notFoundPage(ctx);
    see(ctx, `/owner/submissions/${record.submission_id}?notice=resent`);
  });

  router.post('/owner/submissions/:id/copies/:copyId/resend', ...write, async (ctx) => {
    const record = await resendOwnerCopy(ctx, deps, ownerState(ctx).owner!.email, ctx.params.id ?? '', ctx.params.copyId ?? '');
    if (!record) return notFoundPage(ctx);
    see(ctx, `/owner/submissions/${record.submission_id}?notice=copy-resent`);
  });

  router.post('/owner/submissions/:id/spam-mark', ...write, (ctx) => markFromForm(ctx, deps));

  router.post('/owner/submissions/:id/delete', ...write, async (ctx) => {
    const keyId = await deleteOwnerSubmission(ctx.state.em, deps, ownerState(ctx).owner!.email, ctx.params.id ?? '');
    if (!keyId) return notFoundPage(ctx);
    see(ctx, `/owner/keys/${keyId}/submissions?notice=removed`);
  });

  return router;
}
