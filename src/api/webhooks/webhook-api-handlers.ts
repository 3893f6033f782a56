// The handlers of a key's webhooks as JSON (webhook-api-routes.ts registers them): endpoints
// listed, added (a generic webhook or a chat channel), enabled or disabled, deleted, and the
// delivery log with re-send. Each takes the access of its router: the owner's or the operator's.
import type { Middleware } from 'koa';
import * as v from 'valibot';
import type { AddressPolicy } from '../../shared/webhooks/address-guard.ts';
import { webhookJob } from '../../shared/deliveries/delivery-jobs.ts';
import { markWebhookForResend, parseWebhookUrl } from '../../shared/webhooks/webhooks.ts';
import { CHAT_KINDS, URL_CHAT_KINDS, type NewChatChannel } from '../../shared/webhooks/chat-channels.ts';
import { listEndpoints, listWebhookDeliveries } from '../../shared/webhooks/webhooks.ts';
import type { AppContext, AppDeps, AppState, RouteContext } from '../context.ts';
import { errors } from '../api-errors.ts';
import { clearFinishedJob } from '../finished-jobs.ts';
import { addChatChannel, addWebhook, deleteWebhook, enableWebhook } from '../keys/key-changes.ts';
import { enqueueCommitted } from '../submissions/enqueue.ts';
import { validate } from '../validate.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** A generic webhook (`kind` left out or `webhook`), a chat channel by its incoming-webhook URL, or a Telegram chat. */
const NewWebhookSchema = v.variant(
  'kind',
  [
    v.strictObject({ kind: v.optional(v.literal('webhook')), url: v.string('Give the URL.') }, 'A webhook takes url (and kind: webhook), nothing else.'),
    v.strictObject(
      { kind: v.picklist(URL_CHAT_KINDS), url: v.string('Give the incoming-webhook URL.') },
      'A Slack, Discord, Teams or Mattermost channel takes kind and url (its incoming-webhook URL), nothing else.',
    ),
    v.strictObject(
      {
        kind: v.literal('telegram'),
        bot_token: v.string('Give the bot token.'),
        chat_id: v.union([v.string(), v.number()], 'Give the chat id: a number, or a channel’s @name.'),
      },
      'A Telegram channel takes kind, bot_token and chat_id, nothing else.',
    ),
  ],
  `kind must be one of webhook, ${CHAT_KINDS.join(', ')}.`,
);

/** What the request asks for: a generic webhook's URL, or a chat channel as the shared rules take it. */
function newEndpointOf(input: v.InferOutput<typeof NewWebhookSchema>): { url: string } | { chat: NewChatChannel } {
  if ('bot_token' in input) return { chat: { kind: 'telegram', botToken: input.bot_token, chatId: String(input.chat_id) } };
  return input.kind === undefined || input.kind === 'webhook' ? { url: input.url } : { chat: { kind: input.kind, url: input.url } };
}
const WebhookPatchSchema = v.strictObject({ enabled: v.boolean('Must be true or false.') }, 'Only enabled can be changed.');
const DeliveryQuerySchema = v.object({
  submission: v.optional(v.pipe(v.string('Give one submission id.'), v.regex(UUID, 'Not a submission id.'))),
  limit: v.optional(v.pipe(v.string(), v.regex(/^\d+$/, 'Must be a whole number.'), v.transform(Number), v.minValue(1), v.maxValue(200, 'At most 200.')), '50'),
});

/** How a router finds the key of the path and guards its routes. */
export type WebhookAccess = {
  prefix: string;
  /** Before every read, and before every write. */
  read: Array<Middleware<AppState>>;
  write: Array<Middleware<AppState>>;
  /** The owner finds the key before reading the request; the operator after (see keyId). */
  findKey?: Middleware<AppState>;
  keyId: (ctx: RouteContext) => Promise<string>;
  /** A body the re-send may carry (the owner's writes may send `{}`). */
  resendBody: Array<Middleware<AppState>>;
  noStore: boolean;
  unknownWebhook: string;
  unknownDelivery: string;
};

/** What every handler of one router is given: the app, the router's access, the webhook address policy. */
export type WebhookApi = { deps: AppDeps; access: WebhookAccess; policy: AddressPolicy };

const noStore = (ctx: RouteContext, access: WebhookAccess) => access.noStore && ctx.set('Cache-Control', 'no-store');

/** A well-formed id from the path; anything else cannot be one of the key's rows. */
function rowId(ctx: RouteContext, unknown: string): string {
  const id = ctx.params.id ?? '';
  if (!UUID.test(id)) throw errors.notFound(unknown);
  return id;
}

/** GET …/webhooks */
export async function listWebhooks(ctx: RouteContext, { access }: WebhookApi): Promise<void> {
  const keyId = await access.keyId(ctx);
  noStore(ctx, access);
  ctx.body = { webhooks: await listEndpoints(ctx.state.em, keyId) };
}

/** POST …/webhooks: a generic webhook (its secret answered this once) or a chat channel. */
export async function createWebhook(ctx: RouteContext, { deps, access, policy }: WebhookApi): Promise<void> {
  const wanted = newEndpointOf(validate(NewWebhookSchema, ctx.request.body));
  const keyId = await access.keyId(ctx);
  if ('chat' in wanted) {
    // The channel's credential is kept sealed and never answered: the record shows it shortened.
    const webhook = await addChatChannel(deps, ctx.state.em, keyId, wanted.chat, policy);
    ctx.body = { webhook };
  } else {
    const created = await addWebhook(deps, ctx.state.em, keyId, parseWebhookUrl(wanted.url, policy));
    // The secret is shown this once; it is kept sealed, for signing.
    ctx.body = { webhook: created.endpoint, secret: created.secret };
  }
  noStore(ctx, access);
  ctx.status = 201;
}

/** PATCH …/webhooks/:id: enabled or disabled. */
export async function patchWebhook(ctx: RouteContext, { deps, access }: WebhookApi): Promise<void> {
  const { enabled } = validate(WebhookPatchSchema, ctx.request.body);
  const keyId = await access.keyId(ctx);
  if (!(await enableWebhook(deps, ctx.state.em, keyId, rowId(ctx, access.unknownWebhook), enabled))) throw errors.notFound(access.unknownWebhook);
  ctx.body = { webhook: (await listEndpoints(ctx.state.em, keyId)).find((endpoint) => endpoint.id === ctx.params.id) };
}

/** DELETE …/webhooks/:id */
export async function removeWebhook(ctx: RouteContext, { deps, access }: WebhookApi): Promise<void> {
  const keyId = await access.keyId(ctx);
  if (!(await deleteWebhook(deps, ctx.state.em, keyId, rowId(ctx, access.unknownWebhook)))) throw errors.notFound(access.unknownWebhook);
  ctx.status = 204;
}

/** GET …/webhook-deliveries: the key's delivery log, or one submission's. */
export async function listDeliveries(ctx: RouteContext, { access }: WebhookApi): Promise<void> {
  const query = validate(DeliveryQuerySchema, { ...ctx.query });
  const keyId = await access.keyId(ctx);
  noStore(ctx, access);
  ctx.body = { deliveries: await listWebhookDeliveries(ctx.state.em, { keyId, submissionId: query.submission, limit: query.limit }) };
}

/** POST …/webhook-deliveries/:id/resend: a failed delivery queued again. */
export async function resendDelivery(ctx: RouteContext, { deps, access }: WebhookApi): Promise<void> {
  const keyId = await access.keyId(ctx);
  const deliveryId = rowId(ctx, access.unknownDelivery);
  if (!(await resendWebhookDelivery(ctx, deps, keyId, deliveryId))) throw errors.notFound(access.unknownDelivery);
  ctx.status = 202;
  ctx.body = { success: true, delivery_id: deliveryId, status: 'queued' };
}

/**
 * Queues a failed delivery of the key again (the API's and the console page's re-send); false when
 * the key has no failed delivery with that id. A finished job under the row's id would make the new
 * add a no-op (see clearFinishedJob); a Redis outage leaves the row to the reconciler.
 */
export async function resendWebhookDelivery(ctx: AppContext, deps: AppDeps, keyId: string, deliveryId: string): Promise<boolean> {
  if (!(await markWebhookForResend(ctx.state.em, keyId, deliveryId))) return false;
  await clearFinishedJob(deps.webhookQueue, deliveryId).catch(() => undefined);
  await enqueueCommitted(ctx, deps, webhookJob(deliveryId, ctx.state.requestId));
  return true;
}
