// /owner/keys/:keyId/submissions and /owner/keys/:keyId/spam: a key's messages as a list to search
// and filter (the Spam view: only those held as spam), a page at a time.
import { EMAIL_STATUSES } from '../../shared/deliveries/delivery-columns.ts';
import { defaultSubject } from '../../shared/submissions/submissions.ts';
import type { AppDeps, RouteContext } from '../context.ts';
import { validate } from '../validate.ts';
import { renderPage, SCRIPTED_PAGE_HEADERS } from '../view.ts';
import { filterQuery, isFiltered, ListFilterSchema } from './filters.ts';
import { ownerSubmissionsPage } from './operations.ts';
import { chrome, notFoundPage, STATUS_HELP, TIMES } from './owner-pages.ts';
import { ownerState } from './session.ts';
import { previewOf } from './times.ts';

/** A key's list of messages (the Spam view: only those held as spam), filtered and paged. */
export async function renderSubmissionList(ctx: RouteContext, deps: AppDeps, spamView: boolean): Promise<void> {
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
}
