// The owner console's page of one key's webhooks and chat channels: the endpoints, the delivery
// log, a notice after an action, and what the last form asked for.
import { listEndpoints, listWebhookDeliveries, MAX_WEBHOOKS } from '../../shared/webhooks/webhooks.ts';
import { CHAT_NAMES, isChatKind, MAX_CHAT_CHANNELS, URL_CHAT_KINDS } from '../../shared/webhooks/chat-channels.ts';
import { ownedKey } from '../owners/access.ts';
import { ownerState } from '../owners/session.ts';
import type { AppContext, AppDeps } from '../context.ts';
import { renderPage } from '../view.ts';

/** The bound of src/api/webhooks/owner-webhook-test-post.ts, shown beside its button. */
export const TEST_POSTS_PER_HOUR = 10;

const NOTICES: Record<string, string> = {
  enabled: 'Enabled: new messages are delivered to it again; re-send the failed ones below.',
  disabled: 'Disabled: new messages are not delivered to it.',
  deleted: 'Deleted, with its deliveries.',
  resent: 'The delivery is queued to be sent again; its status below follows.',
};
const DELIVERIES_SHOWN = 50;

/** Renders the page of the signed-in owner's key `keyId`; `extra` overrides what it shows. */
export async function renderWebhooksPage(ctx: AppContext, deps: AppDeps, keyId: string, extra: Record<string, unknown> = {}, status = 200): Promise<void> {
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
      test_posts_per_hour: TEST_POSTS_PER_HOUR,
      secret: '',
      created_url: '',
      ...extra,
    },
    { status },
  );
}
