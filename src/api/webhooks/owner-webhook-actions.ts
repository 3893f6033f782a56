// What the owner console's webhooks page does for its owner: show the page, add a webhook or a chat
// channel, enable, disable or delete one, and re-send a failed delivery. The routes
// (owner-webhook-routes.ts) put the console's guards in front of each.
import type { AddressPolicy } from '../../shared/webhooks/address-guard.ts';
import { KeyRuleError } from '../../shared/keys/keys.ts';
import { parseWebhookUrl } from '../../shared/webhooks/webhooks.ts';
import { CHAT_NAMES, isUrlChatKind, type NewChatChannel } from '../../shared/webhooks/chat-channels.ts';
import { addChatChannel, addWebhook, deleteWebhook, enableWebhook } from '../keys/key-changes.ts';
import { ownedKey } from '../owners/access.ts';
import { notFoundPage, see } from '../owners/owner-pages.ts';
import { ownerState } from '../owners/session.ts';
import type { AppDeps, RouteContext } from '../context.ts';
import { errors } from '../api-errors.ts';
import { resendWebhookDelivery } from './webhook-api-handlers.ts';
import { renderWebhooksPage } from './owner-webhook-page.ts';

const ID = /^[0-9a-f-]{36}$/i;

/** The path's key, if the signed-in owner owns it. */
export const keyOf = async (ctx: RouteContext) => ownedKey(ctx.state.em, ownerState(ctx).owner!.email, ctx.params.keyId ?? '');

/** The chat form's `kind`: one of the chat platforms; a form without it adds a generic webhook. */
const chatChannelOfForm = (form: URLSearchParams): NewChatChannel | undefined => {
  const kind = form.get('kind') ?? '';
  if (kind === 'telegram') return { kind, botToken: form.get('bot_token') ?? '', chatId: form.get('chat_id') ?? '' };
  if (isUrlChatKind(kind)) return { kind, url: form.get('url') ?? '' };
  if (kind && kind !== 'webhook') throw new KeyRuleError('invalid', 'kind', 'Choose Slack, Discord, Microsoft Teams or Mattermost.');
  return undefined;
};

/** GET /owner/keys/:keyId/webhooks */
export async function showWebhooks(ctx: RouteContext, deps: AppDeps): Promise<void> {
  const key = await keyOf(ctx);
  if (!key) return notFoundPage(ctx);
  await renderWebhooksPage(ctx, deps, key.id);
}

/** POST /owner/keys/:keyId/webhooks: a webhook (its signing secret shown once, on this answer) or a chat channel added. */
export async function addEndpoint(ctx: RouteContext, deps: AppDeps, webhookPolicy: AddressPolicy): Promise<void> {
  const key = await keyOf(ctx);
  if (!key) return notFoundPage(ctx);
  const form = ownerState(ctx).form!;
  // What the owner chose comes back on a refusal, but no URL or bot token: they are credentials.
  const chatForm = { kind: form.get('kind') ?? '', chat_id: form.get('chat_id') ?? '' };
  try {
    const chat = chatChannelOfForm(form);
    if (chat) {
      const added = await addChatChannel(deps, ctx.state.em, key.id, chat, webhookPolicy);
      await renderWebhooksPage(ctx, deps, key.id, {
        notice: `${CHAT_NAMES[chat.kind]} channel added: each new message is posted to it. It is shown below as ${added.url}.`,
      });
      return;
    }
    const url = parseWebhookUrl(form.get('url') ?? '', webhookPolicy);
    const created = await addWebhook(deps, ctx.state.em, key.id, url);
    await renderWebhooksPage(ctx, deps, key.id, { secret: created.secret, created_url: created.endpoint.url });
  } catch (error) {
    if (!(error instanceof KeyRuleError) || error.code === 'not_found') throw error;
    await renderWebhooksPage(ctx, deps, key.id, { error: error.message, chat_form: chatForm }, 400);
  }
}

/** POST /owner/keys/:keyId/webhooks/:id: enable, disable or delete one. */
export async function changeEndpoint(ctx: RouteContext, deps: AppDeps): Promise<void> {
  const key = await keyOf(ctx);
  const id = ctx.params.id ?? '';
  if (!key || !ID.test(id)) return notFoundPage(ctx);
  const action = ownerState(ctx).form!.get('action');
  let done: boolean;
  if (action === 'enable' || action === 'disable') done = await enableWebhook(deps, ctx.state.em, key.id, id, action === 'enable');
  else if (action === 'delete') done = await deleteWebhook(deps, ctx.state.em, key.id, id);
  else throw errors.invalidFields({ action: ['Must be enable, disable or delete.'] });
  if (!done) return notFoundPage(ctx);
  see(ctx, `/owner/keys/${key.id}/webhooks?notice=${action}d`);
}

/** POST /owner/keys/:keyId/webhook-deliveries/:id/resend: a failed delivery queued again. */
export async function resendDelivery(ctx: RouteContext, deps: AppDeps): Promise<void> {
  const key = await keyOf(ctx);
  const id = ctx.params.id ?? '';
  if (!key || !ID.test(id) || !(await resendWebhookDelivery(ctx, deps, key.id, id))) return notFoundPage(ctx);
  see(ctx, `/owner/keys/${key.id}/webhooks?notice=resent#d-${id}`);
}
