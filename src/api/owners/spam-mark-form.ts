// POST /owner/submissions/:id/spam-mark: the console's Spam and Not spam buttons, back where the
// button was (the Spam view's list, else the message's page) with a notice of what was done.
import type { AppDeps, RouteContext } from '../context.ts';
import { errors } from '../api-errors.ts';
import { notFoundPage, see } from './owner-pages.ts';
import { ownerState } from './session.ts';
import { markSubmission } from './spam-marks.ts';

export async function markFromForm(ctx: RouteContext, deps: AppDeps): Promise<void> {
  const form = ownerState(ctx).form!;
  const mark = form.get('mark');
  if (mark !== 'spam' && mark !== 'ham') throw errors.invalidFields({ mark: ['Must be spam or ham.'] });
  const result = await markSubmission(ctx, deps, ownerState(ctx).owner!.email, ctx.params.id ?? '', mark);
  if (!result) return notFoundPage(ctx);
  const taught = result.teaching === 'taught' || result.teaching === 'known';
  const notice = `notice=${mark}-${taught ? 'taught' : 'untaught'}${mark === 'ham' && !result.released ? '-nothing-held' : ''}`;
  see(ctx, form.get('view') === 'spam' ? `/owner/keys/${result.submission.key.id}/spam?${notice}` : `/owner/submissions/${result.submission.id}?${notice}`);
}
