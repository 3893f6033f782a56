// /confirm — an address says it wants this service's mail (recipient consent, src/shared/keys/consent.ts).
// The link in the key emails opens a page whose button confirms: mail scanners fetch links, so a
// GET changes nothing; only the POST confirms, then the mailbox's held submissions are released.
// What happens to the POST, in order: rate limit → parse → verify the link's token → confirm
// (lasting) and release held submissions → enqueue them → respond.
import type Router from '@koa/router';
import type { Middleware } from 'koa';
import { createConsentSigner, mailboxOf } from '../../shared/keys/consent.ts';
import { confirmMailboxOf } from './key-changes.ts';
import { submissionJob } from '../../shared/submissions/delivery-jobs.ts';
import { enqueueCommitted } from '../submissions/enqueue.ts';
import type { AppContext, AppDeps, AppState } from '../context.ts';
import { FORM_TYPE, formBody, formField } from '../middleware/json-body.ts';
import { createRouter } from '../router.ts';
import { renderPage } from '../view.ts';

export const CONFIRM_PATH = '/confirm';
const ENQUEUE_IN_REQUEST = 200;

type LinkFields = { address: string; token: string };

export function confirmRoutes(deps: AppDeps, limiter: Middleware<AppState>): Router<AppState> {
  const router = createRouter();
  const signer = createConsentSigner(deps.config.SECRET);
  const valid = (fields: LinkFields) => fields.address.length <= 254 && signer.verify(fields.address, fields.token);

  router.get(CONFIRM_PATH, (ctx) => {
    const fields = linkFields(new URLSearchParams(ctx.querystring));
    if (!valid(fields)) return invalidLink(ctx);
    renderPage(ctx, 'confirm', { ...fields, per_hour: deps.config.UNCONFIRMED_EMAILS_PER_HOUR });
  });

  router.post(CONFIRM_PATH, limiter, async (ctx) => {
    if (!ctx.is(FORM_TYPE)) return invalidLink(ctx);
    await formBody(ctx, async () => undefined);
    const body: unknown = ctx.request.body;
    const fields = { address: formField(body, 'address'), token: formField(body, 'token') };
    if (!valid(fields)) return invalidLink(ctx);

    // A link signed before the mailbox rule last changed names the inbox in an older spelling.
    const released = await confirmMailboxOf(deps, ctx.state.em, mailboxOf(fields.address));
    // A flood may have held thousands: the request enqueues a bounded first part, and the
    // reconciler enqueues the rest (they are `queued` rows without a job).
    for (const id of released.slice(0, ENQUEUE_IN_REQUEST)) await enqueueCommitted(ctx, deps, submissionJob(id, ctx.state.requestId));
    ctx.state.log.info({ released: released.length }, 'address confirmed');
    renderPage(ctx, 'confirmed', { address: fields.address, released: released.length });
  });

  return router;
}

const linkFields = (params: URLSearchParams): LinkFields => ({ address: params.get('address') ?? '', token: params.get('token') ?? '' });

function invalidLink(ctx: AppContext): void {
  renderPage(ctx, 'link-invalid', {}, { status: 400 });
}
