// /owner/api/keys/:keyId/submissions, /owner/api/submissions/:id — a key's messages as JSON (a page
// at a time, filtered, or all as CSV), and each message: read, its files, re-send (its email, or one
// added recipient's copy), mark, delete.
import type Router from '@koa/router';
import * as v from 'valibot';
import { SPAM_MARKS } from '../../shared/words/spam-kinds.ts';
import type { AppDeps, AppState } from '../context.ts';
import { errors } from '../api-errors.ts';
import { jsonObjectBody } from '../middleware/json-body.ts';
import { createRouter } from '../router.ts';
import { validate } from '../validate.ts';
import { ListFilterSchema } from './filters.ts';
import {
  deleteOwnerSubmission,
  getOwnerSubmission,
  MAX_PAGE_SIZE,
  notFound,
  ownerSubmissionsPage,
  PAGE_SIZE,
  resendOwnerCopy,
  resendOwnerSubmission,
  sendOwnerCsv,
  sendOwnerFile,
} from './operations.ts';
import { apiGuards, optionalJsonBody, ownerEmail, ownerState } from './session.ts';
import { markSubmission } from './spam-marks.ts';

const ListQuerySchema = v.object({
  limit: v.optional(
    v.pipe(v.string(), v.regex(/^\d+$/, 'Must be a whole number.'), v.transform(Number), v.minValue(1), v.maxValue(MAX_PAGE_SIZE, `At most ${MAX_PAGE_SIZE}.`)),
    String(PAGE_SIZE),
  ),
  cursor: v.optional(v.string('Give one cursor.')),
  view: v.optional(v.pipe(v.picklist(['all', 'spam'], 'Must be all or spam.'), v.description('spam: only the messages held as spam (the Spam view)')), 'all'),
});

export const SpamMarkSchema = v.strictObject(
  { mark: v.pipe(v.picklist(SPAM_MARKS, 'Must be spam or ham.'), v.description('ham: not spam (a held message is sent); spam: spam')) },
  'Only mark can be given.',
);

export function ownerApiSubmissionRoutes(deps: AppDeps): Router<AppState> {
  const router = createRouter('/owner/api');
  const { signedIn, write } = apiGuards(deps);
  const json = jsonObjectBody(() => errors.unsupportedMediaType(['application/json']));

  router.get('/keys/:keyId/submissions', signedIn, async (ctx) => {
    const { view, ...query } = validate(ListQuerySchema, { ...ctx.query });
    const filters = validate(ListFilterSchema, { ...ctx.query });
    const page = await ownerSubmissionsPage(ctx.state.em, deps, ownerEmail(ctx), ctx.params.keyId ?? '', {
      ...query,
      filters,
      sessionId: ownerState(ctx).owner!.id,
      ...(view === 'spam' ? { status: 'spam' as const } : {}),
    });
    if (!page) throw notFound();
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { submissions: page.submissions, next_cursor: page.next_cursor };
  });

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

  router.post('/submissions/:id/spam-mark', ...write, json, async (ctx) => {
    const { mark } = validate(SpamMarkSchema, ctx.request.body);
    const result = await markSubmission(ctx, deps, ownerEmail(ctx), ctx.params.id ?? '', mark);
    if (!result) throw notFound();
    const submission = await getOwnerSubmission(ctx.state.em, deps, ownerEmail(ctx), result.submission.id);
    ctx.body = { teaching: result.teaching, released: result.released, submission };
  });

  router.delete('/submissions/:id', ...write, async (ctx) => {
    if (!(await deleteOwnerSubmission(ctx.state.em, deps, ownerEmail(ctx), ctx.params.id ?? ''))) throw notFound();
    ctx.status = 204;
  });

  return router;
}
