// /confirm — an address says it wants this service's mail (recipient consent, src/shared/keys/consent.ts).
// The link in the key emails opens a page whose button confirms: mail scanners fetch links, so a
// GET changes nothing; only the POST confirms, then the mailbox's held submissions are released.
// An address added to a key (src/shared/recipients) has a link of its own (`recipient` and its
// token): its page confirms that one key's copies, and releases the copies held for it, or removes
// the address from the key; the same link, in each copy, is how it stops them (its button, or a
// mail client's one-click POST to the link).
// What happens to the POST, in order: rate limit → parse → verify the link's token → confirm
// (lasting) and release what was held, or remove the added address → enqueue → respond.
import type Router from '@koa/router';
import type { Middleware } from 'koa';
import { createConsentSigner, mailboxOf, type ConsentSigner } from '../../shared/keys/consent.ts';
import { confirmRecipient, findRecipientForConsent, removeRecipient } from '../../shared/recipients/recipients.ts';
import { confirmMailboxOf } from './key-changes.ts';
import { recipientCopyJob, submissionJob, type DeliveryRequest } from '../../shared/deliveries/delivery-jobs.ts';
import { enqueueCommitted } from '../submissions/enqueue.ts';
import type { AppContext, AppDeps, AppState } from '../context.ts';
import { FORM_TYPE, formBody, formField } from '../middleware/json-body.ts';
import { createRouter } from '../router.ts';
import { renderPage } from '../view.ts';
import { isMultipartOneClick } from './one-click.ts';

export const CONFIRM_PATH = '/confirm';
const ENQUEUE_IN_REQUEST = 200;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

type LinkFields = { address: string; token: string };
type RecipientLink = { recipient: string; token: string };

export function confirmRoutes(deps: AppDeps, limiter: Middleware<AppState>): Router<AppState> {
  const router = createRouter();
  const signer = createConsentSigner(deps.config.SECRET);
  const valid = (fields: LinkFields) => fields.address.length <= 254 && signer.verify(fields.address, fields.token);

  router.get(CONFIRM_PATH, async (ctx) => {
    const params = new URLSearchParams(ctx.querystring);
    if (params.has('recipient')) return recipientPage(ctx, signer, { recipient: params.get('recipient') ?? '', token: params.get('token') ?? '' });
    const fields = linkFields(params);
    if (!valid(fields)) return invalidLink(ctx);
    renderPage(ctx, 'confirm', { ...fields, per_hour: deps.config.UNCONFIRMED_EMAILS_PER_HOUR });
  });

  router.post(CONFIRM_PATH, limiter, async (ctx) => {
    if (ctx.is('multipart/form-data')) {
      // Only a one-click unsubscribe comes as multipart; the pages' own buttons post urlencoded.
      if (!(await isMultipartOneClick(ctx))) return invalidLink(ctx);
      return oneClick(ctx, deps, signer);
    }
    if (!ctx.is(FORM_TYPE)) return invalidLink(ctx);
    await formBody(ctx, async () => undefined);
    const body: unknown = ctx.request.body;
    // RFC 8058 one-click: a mail client posts `List-Unsubscribe=One-Click` to the copy's
    // List-Unsubscribe link itself; the link's query names the address and carries its token.
    if (formField(body, 'List-Unsubscribe') === 'One-Click') return oneClick(ctx, deps, signer);
    if (formField(body, 'recipient')) {
      const link = { recipient: formField(body, 'recipient'), token: formField(body, 'token') };
      return recipientAnswer(ctx, deps, signer, link, formField(body, 'action'));
    }
    const fields = { address: formField(body, 'address'), token: formField(body, 'token') };
    if (!valid(fields)) return invalidLink(ctx);

    // A link signed before the mailbox rule last changed names the inbox in an older spelling.
    const released = await confirmMailboxOf(deps, ctx.state.em, mailboxOf(fields.address));
    await enqueueReleased(
      ctx,
      deps,
      released.map((id) => submissionJob(id, ctx.state.requestId)),
    );
    ctx.state.log.info({ released: released.length }, 'address confirmed');
    renderPage(ctx, 'confirmed', { address: fields.address, released: released.length });
  });

  return router;
}

/** RFC 8058 one-click, posted to the copy's link itself: its query names the address and carries the token. */
function oneClick(ctx: AppContext, deps: AppDeps, signer: ConsentSigner): Promise<void> {
  const params = new URLSearchParams(ctx.querystring);
  return recipientAnswer(ctx, deps, signer, { recipient: params.get('recipient') ?? '', token: params.get('token') ?? '' }, 'remove');
}

/** The added address's page: who added it, and a button to confirm (or, once confirmed, to stop) and one to be removed. */
async function recipientPage(ctx: AppContext, signer: ConsentSigner, link: RecipientLink): Promise<void> {
  const recipient = validRecipient(signer, link) ? await findRecipientForConsent(ctx.state.em, link.recipient) : undefined;
  if (!recipient) return invalidLink(ctx, true);
  renderPage(ctx, 'recipient-confirm', { ...link, email: recipient.email, owner: recipient.owner_email, confirmed: recipient.confirmed });
}

/** The added address's answer: `confirm` (its held copies released), or `remove` (off the key, as if the owner removed it). */
async function recipientAnswer(ctx: AppContext, deps: AppDeps, signer: ConsentSigner, link: RecipientLink, action: string): Promise<void> {
  if (!validRecipient(signer, link) || (action !== 'confirm' && action !== 'remove')) return invalidLink(ctx, true);
  const recipient = await findRecipientForConsent(ctx.state.em, link.recipient);
  if (!recipient) return invalidLink(ctx, true);
  if (action === 'remove') {
    await removeRecipient(ctx.state.em, link.recipient);
    ctx.state.log.info({ recipientId: link.recipient }, 'an added recipient removed itself from a key');
    return renderPage(ctx, 'recipient-removed', { email: recipient.email, owner: recipient.owner_email });
  }
  const released = await confirmRecipient(ctx.state.em, link.recipient);
  if (released === undefined) return invalidLink(ctx, true);
  await enqueueReleased(
    ctx,
    deps,
    released.map((id) => recipientCopyJob(id, ctx.state.requestId)),
  );
  ctx.state.log.info({ recipientId: link.recipient, released: released.length }, 'added recipient confirmed');
  renderPage(ctx, 'recipient-confirmed', { email: recipient.email, owner: recipient.owner_email, released: released.length });
}

const validRecipient = (signer: ConsentSigner, link: RecipientLink) => UUID.test(link.recipient) && signer.verifyRecipient(link.recipient, link.token);

/**
 * A flood may have held thousands: the request enqueues a bounded first part, and the reconciler
 * enqueues the rest (they are `queued` rows without a job).
 */
async function enqueueReleased(ctx: AppContext, deps: AppDeps, jobs: DeliveryRequest[]): Promise<void> {
  for (const job of jobs.slice(0, ENQUEUE_IN_REQUEST)) await enqueueCommitted(ctx, deps, job);
}

const linkFields = (params: URLSearchParams): LinkFields => ({ address: params.get('address') ?? '', token: params.get('token') ?? '' });

function invalidLink(ctx: AppContext, recipient = false): void {
  renderPage(ctx, 'link-invalid', { recipient }, { status: 400 });
}
