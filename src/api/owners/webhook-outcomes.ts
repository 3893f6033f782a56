// What the owner sees of each chat and webhook delivery of one message, on its page and in its JSON:
// where it went (the platform and the URL's host: a chat URL's secret or a webhook URL's query
// never shows), its status and attempts, the last HTTP answer or error, and when.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { EmailStatus } from '../../shared/deliveries/delivery-columns.ts';
import { listWebhookDeliveries } from '../../shared/webhooks/webhooks.ts';
import { CHAT_NAMES, isChatKind } from '../../shared/webhooks/chat-channels.ts';

/** More than a key can have endpoints (webhooks, chat channels, and a bounce event to each webhook). */
const OUTCOMES_SHOWN = 50;

/** What each status of a chat or webhook delivery means. */
export const WEBHOOK_STATUS_HELP: Partial<Record<EmailStatus, string>> = {
  queued: 'waiting for a worker',
  sending: 'being posted now',
  retrying: 'refused or not answered for now; it will be tried again',
  sent: 'delivered: the endpoint answered 2xx',
  failed: 'not delivered: the last error says why; re-send it from the Webhooks and chat page',
  skipped: 'not posted: the reason is below',
};

export type WebhookOutcome = {
  delivery_id: string;
  endpoint_id: string;
  kind: string;
  /** Slack, Discord, Microsoft Teams, Mattermost, Telegram, or Webhook. */
  platform: string;
  host: string;
  event: string;
  status: EmailStatus;
  attempts: number;
  last_response_code: number | null;
  last_error: string | null;
  delivered_at: string | null;
  created_at: string;
};

/** The host of an endpoint's URL as stored (a chat channel's is already shortened). */
function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return '';
  }
}

/** Each chat and webhook delivery of a submission of the key, newest first. */
export async function webhookOutcomes(em: EntityManager, keyId: string, submissionId: string): Promise<WebhookOutcome[]> {
  const deliveries = await listWebhookDeliveries(em, { keyId, submissionId, limit: OUTCOMES_SHOWN });
  return deliveries.map((delivery) => ({
    delivery_id: delivery.delivery_id,
    endpoint_id: delivery.endpoint_id,
    kind: delivery.kind,
    platform: isChatKind(delivery.kind) ? CHAT_NAMES[delivery.kind] : 'Webhook',
    host: hostOf(delivery.url),
    event: delivery.event,
    status: delivery.status,
    attempts: delivery.attempts,
    last_response_code: delivery.last_response_code,
    last_error: delivery.last_error,
    delivered_at: delivery.delivered_at,
    created_at: delivery.created_at,
  }));
}
