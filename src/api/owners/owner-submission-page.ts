// /owner/submissions/:id: one message on a page of its own, the whole record with its delivery
// status (its own email's, each added recipient's copy's, and each chat and webhook delivery's), its
// files and the forms that act on it.
import { RESENDABLE } from '../../shared/deliveries/delivery-statuses.ts';
import { defaultSubject } from '../../shared/submissions/submissions.ts';
import type { AppDeps, RouteContext } from '../context.ts';
import { renderPage, SCRIPTED_PAGE_HEADERS } from '../view.ts';
import { ownerSubmissionWithKey } from './operations.ts';
import { chrome, COPY_STATUS_HELP, notFoundPage, STATUS_HELP, TIMES } from './owner-pages.ts';
import { previewOf } from './times.ts';
import { WEBHOOK_STATUS_HELP } from './webhook-outcomes.ts';

export async function renderSubmissionPage(ctx: RouteContext, deps: AppDeps): Promise<void> {
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
      webhook_help: WEBHOOK_STATUS_HELP,
      resendable: RESENDABLE,
      refresh: `/owner/api/submissions/${s.submission_id}`,
      scripts: ['/assets/owner.js'],
      ...TIMES,
    },
    { headers: SCRIPTED_PAGE_HEADERS },
  );
}
