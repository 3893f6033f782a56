// /owner/keys/:keyId/submissions, /owner/submissions/:id — a key's messages as a list to search
// and filter (and its Spam view, and the CSV of the list), and each message on a page of its own
// with its delivery status (its own and each added recipient's copy), its files and what can be
// done with it: re-send (the email, or a copy), mark, delete.
import type Router from '@koa/router';
import { EMAIL_STATUSES } from '../../shared/deliveries/delivery-columns.ts';
import { RESENDABLE } from '../../shared/deliveries/delivery-statuses.ts';
import { defaultSubject } from '../../shared/submissions/submissions.ts';
import type { AppDeps, AppState, RouteContext } from '../context.ts';
import { errors } from '../api-errors.ts';
import { refusalsAsPage } from '../middleware/error-handler.ts';
import { createRouter } from '../router.ts';
import { validate } from '../validate.ts';
import { renderPage, SCRIPTED_PAGE_HEADERS } from '../view.ts';
import { filterQuery, isFiltered, ListFilterSchema } from './filters.ts';
import {
  deleteOwnerSubmission,
  ownerSubmissionsPage,
  ownerSubmissionWithKey,
  resendOwnerCopy,
  resendOwnerSubmission,
  sendOwnerCsv,
  sendOwnerFile,
} from './operations.ts';
import { chrome, COPY_STATUS_HELP, notFoundPage, pageGuards, see, STATUS_HELP, TIMES } from './owner-pages.ts';
import { ownerState } from './session.ts';
import { markSubmission } from './spam-marks.ts';
import { previewOf } from './times.ts';

export function ownerSubmissionPages(deps: AppDeps): Router<AppState> {
  const router = createRouter();
  const { signedIn, write } = pageGuards(deps);
  router.use(refusalsAsPage('owner-error'));

  /** A key's list of messages (the Spam view: only those held as spam), filtered and paged. */
  const listPage = async (ctx: RouteContext, spamView: boolean) => {
    const page = chrome(ctx);
    const cursor = typeof ctx.query.cursor === 'string' ? ctx.query.cursor : undefined;
    const filters = validate(ListFilterSchema, { ...ctx.query });
    const keyId = ctx.params.keyId ?? '';
    const result = await ownerSubmissionsPage(ctx.state.em, deps, page.email, keyId, {
      cursor,
      filters,
      sessionId: ownerState(ctx).owner!.id,
      ...(spamView ? { status: 'spam' as const } : {}),
    });
    if (!result) return notFoundPage(ctx);
    const base = `/owner/keys/${result.key.id}/${spamView ? 'spam' : 'submissions'}`;
    const submissions = result.submissions.map((record) => ({ ...record, preview: previewOf(record, defaultSubject(record.email)) }));
    // The optional live refresh (assets/owner.js) reads the same page of the JSON API.
    const apiQuery = filterQuery(filters, { ...(cursor ? { cursor } : {}), ...(spamView ? { view: 'spam' } : {}) });
    renderPage(
      ctx,
      'owner-submissions',
      {
        ...page,
        ...result,
        submissions,
        spam_view: spamView,
        first_page: !cursor,
        filters,
        filtered: isFiltered(filters),
        statuses: EMAIL_STATUSES,
        status_help: STATUS_HELP,
        base,
        newest: `${base}${filterQuery(filters)}`,
        older: result.next_cursor ? `${base}${filterQuery(filters, { cursor: result.next_cursor })}` : '',
        csv: `/owner/keys/${result.key.id}/submissions.csv${filterQuery(filters)}`,
        refresh: `/owner/api/keys/${result.key.id}/submissions${apiQuery}`,
        scripts: ['/assets/owner.js'],
        ...TIMES,
      },
      { headers: SCRIPTED_PAGE_HEADERS },
    );
  };
  router.get('/owner/keys/:keyId/submissions', signedIn, (ctx) => listPage(ctx, false));
  router.get('/owner/keys/:keyId/spam', signedIn, (ctx) => listPage(ctx, true));

  router.get('/owner/keys/:keyId/submissions.csv', signedIn, async (ctx) => {
    const filters = validate(ListFilterSchema, { ...ctx.query });
    if (!(await sendOwnerCsv(ctx, deps, ownerState(ctx).owner!, ctx.params.keyId ?? '', filters))) notFoundPage(ctx);
  });

  /** One message: the whole record, its delivery history, its files and what can be done with it. */
  router.get('/owner/submissions/:id', signedIn, async (ctx) => {
    const page = chrome(ctx);
    const found = await ownerSubmissionWithKey(ctx.state.em, deps, page.email, ctx.params.id ?? '');
    if (!found) return notFoundPage(ctx);
    const s = { ...found.submission, preview: previewOf(found.submission, defaultSubject(found.submission.email)) };
    renderPage(
      ctx,
      'owner-submission',
      {
        ...page,
        key: found.key,
        s,
        status_help: STATUS_HELP,
        copy_help: COPY_STATUS_HELP,
        resendable: RESENDABLE,
        refresh: `/owner/api/submissions/${s.submission_id}`,
        scripts: ['/assets/owner.js'],
        ...TIMES,
      },
      { headers: SCRIPTED_PAGE_HEADERS },
    );
  });

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

  router.post('/owner/submissions/:id/spam-mark', ...write, async (ctx) => {
    const form = ownerState(ctx).form!;
    const mark = form.get('mark');
    if (mark !== 'spam' && mark !== 'ham') throw errors.invalidFields({ mark: ['Must be spam or ham.'] });
    const result = await markSubmission(ctx, deps, ownerState(ctx).owner!.email, ctx.params.id ?? '', mark);
    if (!result) return notFoundPage(ctx);
    const taught = result.teaching === 'taught' || result.teaching === 'known';
    const notice = `notice=${mark}-${taught ? 'taught' : 'untaught'}${mark === 'ham' && !result.released ? '-nothing-held' : ''}`;
    // Back where the button was: the Spam view's list, else the message's page.
    see(ctx, form.get('view') === 'spam' ? `/owner/keys/${result.submission.key.id}/spam?${notice}` : `/owner/submissions/${result.submission.id}?${notice}`);
  });

  router.post('/owner/submissions/:id/delete', ...write, async (ctx) => {
    const keyId = await deleteOwnerSubmission(ctx.state.em, deps, ownerState(ctx).owner!.email, ctx.params.id ?? '');
    if (!keyId) return notFoundPage(ctx);
    see(ctx, `/owner/keys/${keyId}/submissions?notice=removed`);
  });

  return router;
}
