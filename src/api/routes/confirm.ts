// /confirm — an address says it wants this service's mail (recipient consent, src/shared/consent.ts).
// The link in the key emails opens a page whose button confirms: mail scanners fetch links, so a
// GET changes nothing; only the POST confirms, then the mailbox's held submissions are released.
// What happens to the POST, in order: rate limit → parse → verify the link's token → confirm
// (lasting) and release held submissions → enqueue them → respond.
import type Router from '@koa/router';
import type { Middleware } from 'koa';
import { confirmMailbox, createConsentSigner } from '../../shared/consent.ts';
import { enqueueDeliveryFast, submissionJob } from '../../shared/queue.ts';
import type { AppContext, AppDeps, AppState } from '../context.ts';
import { escapeHtml } from '../../shared/html.ts';
import { FORM_TYPE, readBodyText } from '../middleware/json-body.ts';
import { createRouter } from '../router.ts';
import { page, SECURITY_HEADERS, sendHtml } from './pages.ts';

export const CONFIRM_PATH = '/confirm';

type LinkFields = { address: string; token: string };

export function confirmRoutes(deps: AppDeps, limiter: Middleware<AppState>): Router<AppState> {
  const router = createRouter();
  const signer = createConsentSigner(deps.config.SECRET);
  const valid = (fields: LinkFields) => fields.address.length <= 254 && signer.verify(fields.address, fields.token);

  router.get(CONFIRM_PATH, (ctx) => {
    const fields = linkFields(new URLSearchParams(ctx.querystring));
    if (!valid(fields)) return invalidLink(ctx);
    sendHtml(ctx, SECURITY_HEADERS, page('Confirm your address', `<div class="card">
<h1>Receive your contact form messages</h1>
<p>Confirm that <strong>${escapeHtml(fields.address)}</strong> wants the messages sent to it through
this service. Until then, an address receives at most ${deps.config.UNCONFIRMED_EMAILS_PER_HOUR} of them an hour
and the rest wait.</p>
<form method="POST" action="${CONFIRM_PATH}">
<input type="hidden" name="address" value="${escapeHtml(fields.address)}">
<input type="hidden" name="token" value="${escapeHtml(fields.token)}">
<div class="actions"><button type="submit">Confirm ${escapeHtml(fields.address)}</button></div>
</form>
</div>`));
  });

  router.post(CONFIRM_PATH, limiter, async (ctx) => {
    if (!ctx.is(FORM_TYPE)) return invalidLink(ctx);
    await readBodyText(ctx, async () => undefined);
    const fields = linkFields(new URLSearchParams(String(ctx.request.body ?? '')));
    if (!valid(fields)) return invalidLink(ctx);

    const released = await confirmMailbox(deps.orm.em.fork(), fields.address);
    for (const id of released) {
      // Committed as `queued`: whatever fails to enqueue now, the reconciler enqueues later.
      await enqueueDeliveryFast(deps.queue, deps.redis, submissionJob(id, ctx.state.requestId)).catch(() => undefined);
    }
    ctx.state.log.info({ released: released.length }, 'address confirmed');
    sendHtml(ctx, SECURITY_HEADERS, page('Address confirmed', `<div class="card result result-ok">
<h1>Thank you</h1>
<p role="status"><strong>${escapeHtml(fields.address)}</strong> now receives every message sent to it.
${released.length ? `${released.length} waiting message${released.length === 1 ? ' is' : 's are'} on the way.` : ''}</p>
</div>`));
  });

  return router;
}

const linkFields = (params: URLSearchParams): LinkFields => ({ address: params.get('address') ?? '', token: params.get('token') ?? '' });

function invalidLink(ctx: AppContext): void {
  sendHtml(ctx, SECURITY_HEADERS, page('Link not valid', `<div class="card result result-error">
<h1>This link is not valid</h1>
<p role="alert">Open the link from your most recent key email, or ask for your keys again on the start page.</p>
</div>`));
  ctx.status = 400;
}
