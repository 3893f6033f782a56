// /owner/keys/:keyId/webhooks — the owner console's webhooks and chat channels of one key: add (a
// webhook's signing secret is shown on the answer to that POST, once, never in a URL; a chat
// channel's URL or bot token is never shown back but shortened), enable, disable, delete, and the
// delivery log with a re-send for failed deliveries. Same guards as the other console pages.
import type Router from '@koa/router';
import { parseAllowList } from '../../shared/webhooks/address-guard.ts';
import { KeyRuleError } from '../../shared/keys/keys.ts';
import { listEndpoints, listWebhookDeliveries, MAX_WEBHOOKS, parseWebhookUrl } from '../../shared/webhooks/webhooks.ts';
import { CHAT_NAMES, isChatKind, isUrlChatKind, MAX_CHAT_CHANNELS, URL_CHAT_KINDS, type NewChatChannel } from '../../shared/webhooks/chat-channels.ts';
import { addChatChannel, addWebhook, deleteWebhook, enableWebhook } from '../keys/key-changes.ts';
import { ownedKey } from '../owners/access.ts';
import { notFoundPage, pageGuards, see } from '../owners/owner-pages.ts';
import { ownerState } from '../owners/session.ts';
import type { AppContext, AppDeps, AppState, RouteContext } from '../context.ts';
import { errors } from '../api-errors.ts';
import { refusalsAsPage } from '../middleware/error-handler.ts';
import { createRouter } from '../router.ts';
import { renderPage } from '../view.ts';
import { resendWebhookDelivery } from './webhook-api-routes.ts';

const NOTICES: Record<string, string> = {
  enabled: 'Enabled: new messages are delivered to it again; re-send the failed ones below.',
  disabled: 'Disabled: new messages are not delivered to it.',
  deleted: 'Deleted, with its deliveries.',
  resent: 'The delivery is queued to be sent again; its status below follows.',
};
/** The chat form's `kind`: one of the chat platforms; a form without it adds a generic webhook. */
const chatChannelOfForm = (form: URLSearchParams): NewChatChannel | undefined => {
  const kind = form.get('kind') ?? '';
  if (kind === 'telegram') return { kind, botToken: form.get('bot_token') ?? '', chatId: form.get('chat_id') ?? '' };
  if (isUrlChatKind(kind)) return { kind, url: form.get('url') ?? '' };
  if (kind && kind !== 'webhook') throw new KeyRuleError('invalid', 'kind', 'Choose Slack, Discord, Microsoft Teams or Mattermost.');
  return undefined;
};
const DELIVERIES_SHOWN = 50;

export function ownerWebhookRoutes(deps: AppDeps): Router<AppState> {
  const router = createRouter('/owner/keys/:keyId');
  const { signedIn, write } = pageGuards(deps);
  const webhookPolicy = parseAllowList(deps.config.WEBHOOK_ALLOW);
  const keyOf = async (ctx: RouteContext) => ownedKey(ctx.state.em, ownerState(ctx).owner!.email, ctx.params.keyId ?? '');
  const page = async (ctx: AppContext, keyId: string, extra: Record<string, unknown> = {}, status = 200) => {
    const state = ownerState(ctx);
    const em = ctx.state.em;
    const key = (await ownedKey(em, state.owner!.email, keyId))!;
    const notice = NOTICES[typeof ctx.query.notice === 'string' ? ctx.query.notice : ''] ?? '';
    const endpoints = await listEndpoints(em, key.id);
    const chats = endpoints.flatMap((endpoint) => (isChatKind(endpoint.kind) ? [{ ...endpoint, platform: CHAT_NAMES[endpoint.kind] }] : []));
    renderPage(
      ctx,
      'owner-webhooks',
      {
        email: state.owner!.email,
        csrf: state.csrf!,
        notice,
        error: '',
        key: { id: key.id, label: key.label, key: deps.vault.tryDecrypt(key.keyEncrypted) ?? null },
        endpoints: endpoints.filter((endpoint) => endpoint.kind === 'webhook'),
        chats,
        chat_kinds: URL_CHAT_KINDS.map((kind) => ({ kind, name: CHAT_NAMES[kind] })),
        deliveries: (await listWebhookDeliveries(em, { keyId: key.id, limit: DELIVERIES_SHOWN })).map((delivery) => ({
          ...delivery,
          platform: isChatKind(delivery.kind) ? CHAT_NAMES[delivery.kind] : 'Webhook',
        })),
        max: MAX_WEBHOOKS,
        max_chats: MAX_CHAT_CHANNELS,
        chat_form: { kind: '', chat_id: '' },
        disable_after: deps.config.WEBHOOK_DISABLE_AFTER,
        secret: '',
        created_url: '',
        ...extra,
      },
      { status },
    );
  };

  router.use(refusalsAsPage('owner-error'));

  router.get('/webhooks', signedIn, async (ctx) => {
    const key = await keyOf(ctx);
    if (!key) return notFoundPage(ctx);
    await page(ctx, key.id);
  });

  router.post('/webhooks', ...write, async (ctx) => {
    const key = await keyOf(ctx);
    if (!key) return notFoundPage(ctx);
    const form = ownerState(ctx).form!;
    // What the owner chose comes back on a refusal, but no URL or bot token: they are credentials.
    const chatForm = { kind: form.get('kind') ?? '', chat_id: form.get('chat_id') ?? '' };
    try {
      const chat = chatChannelOfForm(form);
      if (chat) {
        const added = await addChatChannel(deps, ctx.state.em, key.id, chat, webhookPolicy);
        await page(ctx, key.id, { notice: `${CHAT_NAMES[chat.kind]} channel added: each new message is posted to it. It is shown below as ${added.url}.` });
        return;
      }
      const url = parseWebhookUrl(form.get('url') ?? '', webhookPolicy);
      const created = await addWebhook(deps, ctx.state.em, key.id, url);
      await page(ctx, key.id, { secret: created.secret, created_url: created.endpoint.url });
    } catch (error) {
      if (!(error instanceof KeyRuleError) || error.code === 'not_found') throw error;
      await page(ctx, key.id, { error: error.message, chat_form: chatForm }, 400);
    }
  });

  router.post('/webhooks/:id', ...write, async (ctx) => {
    const key = await keyOf(ctx);
    const id = ctx.params.id ?? '';
    if (!key || !/^[0-9a-f-]{36}$/i.test(id)) return notFoundPage(ctx);
    const action = ownerState(ctx).form!.get('action');
    let done: boolean;
    if (action === 'enable' || action === 'disable') done = await enableWebhook(deps, ctx.state.em, key.id, id, action === 'enable');
    else if (action === 'delete') done = await deleteWebhook(deps, ctx.state.em, key.id, id);
    else throw errors.invalidFields({ action: ['Must be enable, disable or delete.'] });
    if (!done) return notFoundPage(ctx);
    see(ctx, `/owner/keys/${key.id}/webhooks?notice=${action}d`);
  });

  router.post('/webhook-deliveries/:id/resend', ...write, async (ctx) => {
    const key = await keyOf(ctx);
    const id = ctx.params.id ?? '';
    if (!key || !/^[0-9a-f-]{36}$/i.test(id) || !(await resendWebhookDelivery(ctx, deps, key.id, id))) return notFoundPage(ctx);
    see(ctx, `/owner/keys/${key.id}/webhooks?notice=resent#d-${id}`);
  });

  return router;
}
