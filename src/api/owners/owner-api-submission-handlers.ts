// The owner API's handlers of a key's messages that do more than call one operation: a page of
// messages (filtered, or the Spam view) and a message marked spam or not spam.
import * as v from 'valibot';
import { SPAM_MARKS } from '../../shared/words/spam-kinds.ts';
import type { AppDeps, RouteContext } from '../context.ts';
import { validate } from '../validate.ts';
import { ListFilterSchema } from './filters.ts';
import { getOwnerSubmission, MAX_PAGE_SIZE, notFound, ownerSubmissionsPage, PAGE_SIZE } from './operations.ts';
import { ownerEmail, ownerState } from './session.ts';
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

/** GET /owner/api/keys/:keyId/submissions: a page of the key's messages. */
export async function listKeySubmissions(ctx: RouteContext, deps: AppDeps): Promise<void> {
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
}

/** POST /owner/api/submissions/:id/spam-mark: spam or ham, with what the filter was taught and whether a held message was sent. */
export async function markSpamOrHam(ctx: RouteContext, deps: AppDeps): Promise<void> {
  const { mark } = validate(SpamMarkSchema, ctx.request.body);
  const result = await markSubmission(ctx, deps, ownerEmail(ctx), ctx.params.id ?? '', mark);
  if (!result) throw notFound();
  const submission = await getOwnerSubmission(ctx.state.em, deps, ownerEmail(ctx), result.submission.id);
  ctx.body = { teaching: result.teaching, released: result.released, submission };
}
