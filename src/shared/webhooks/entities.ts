// The webhooks feature's tables: each key's endpoints and each delivery of an event to one.
import { randomUUID } from 'node:crypto';
import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import { createdAt } from '../infra/db/columns.ts';
import { VerificationKeySchema } from '../keys/entities.ts';
import { SubmissionSchema } from '../submissions/entities.ts';
import { deliveryColumns } from '../deliveries/delivery-columns.ts';
import { ENDPOINT_KINDS } from './endpoint-kinds.ts';

/**
 * A webhook endpoint of a key (src/shared/webhooks/webhooks.ts): where each accepted submission is POSTed.
 * A generic one (`kind` webhook) is signed with the endpoint's secret (sealed under SECRET like the keys,
 * shown to the owner once); a chat channel (src/shared/webhooks/chat-channels.ts) keeps its credential
 * sealed in the same column (the incoming-webhook URL, or the Telegram bot token) and `url` shows it shortened.
 */
export const WebhookEndpointSchema = defineEntity({
  name: 'WebhookEndpoint',
  tableName: 'webhook_endpoints',
  properties: {
    id: p
      .uuid()
      .primary()
      .onCreate(() => randomUUID()),
    key: () => p.manyToOne(VerificationKeySchema).deleteRule('cascade').index(),
    kind: p.enum(ENDPOINT_KINDS).default('webhook'),
    url: p.string().length(2048),
    secretSealed: p.text(),
    /** A Telegram channel's chat: a number, or a public channel's @name. */
    chatId: p.string().length(64).nullable(),
    enabled: p.boolean().default(true),
    /** Deliveries that ended `failed` since the last one delivered: past WEBHOOK_DISABLE_AFTER the endpoint is disabled. */
    consecutiveFailures: p.integer().default(0),
    disabledAt: p.datetime().nullable(),
    createdAt: createdAt(),
  },
});
export type WebhookEndpoint = InferEntity<typeof WebhookEndpointSchema>;

/** What a webhook delivery tells its endpoint. */
export const WEBHOOK_EVENTS = ['submission.created', 'submission.bounced'] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

/** One event of a submission to one endpoint: delivered like an email, with the same delivery columns. */
export const WebhookDeliverySchema = defineEntity({
  name: 'WebhookDelivery',
  tableName: 'webhook_deliveries',
  properties: {
    id: p
      .uuid()
      .primary()
      .onCreate(() => randomUUID()),
    endpoint: () => p.manyToOne(WebhookEndpointSchema).deleteRule('cascade').index(),
    submission: () => p.manyToOne(SubmissionSchema).deleteRule('cascade').index(),
    event: p.enum(WEBHOOK_EVENTS).default('submission.created'),
    ...deliveryColumns(),
    /** The HTTP status of the last answer, null when there was none (refused, timeout, network). */
    lastResponseCode: p.integer().nullable(),
    createdAt: createdAt(),
  },
  indexes: [{ properties: ['emailStatus', 'createdAt'], name: 'webhook_deliveries_status_created_idx' }],
});
export type WebhookDelivery = InferEntity<typeof WebhookDeliverySchema>;
