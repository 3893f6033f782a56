// The webhooks' part of the OpenAPI document (src/api/site/openapi.ts spreads it in): the admin API's,
// the owner console pages' and the owner JSON API's routes for endpoints (generic webhooks and chat
// channels) and deliveries, and under `webhooks` the request this service POSTs to a generic
// endpoint, with the JSON Schema of its body (src/workers/webhooks/webhook-payload.ts builds it). A
// chat channel gets its platform's own message instead (docs/webhooks.md#chat-channels).
import * as v from 'valibot';
import { EMAIL_STATUSES } from '../../shared/deliveries/delivery-columns.ts';
import { WEBHOOK_EVENTS } from '../../shared/webhooks/entities.ts';
import { MAX_WEBHOOKS } from '../../shared/webhooks/webhooks.ts';
import { CHAT_KINDS, ENDPOINT_KINDS, MAX_CHAT_CHANNELS, URL_CHAT_KINDS } from '../../shared/webhooks/chat-channels.ts';
import {
  adminSecurity,
  BounceDetail,
  FileScan,
  SpamDetail,
  error,
  forbidden,
  idParam,
  json,
  keyParam,
  notOwned,
  ownerSecurity,
  ownerWriteSecurity,
  unauthorized,
} from '../site/openapi-parts.ts';

const described = <T extends v.GenericSchema>(schema: T, text: string) => v.pipe(schema, v.description(text));

export const SubmissionCreatedSchema = v.object({
  type: v.literal('submission.created'),
  timestamp: described(v.pipe(v.string(), v.isoTimestamp()), 'When this attempt was made'),
  data: v.object({
    id: described(v.pipe(v.string(), v.uuid()), 'The submission id (as in the email and the admin API)'),
    created_at: described(v.pipe(v.string(), v.isoTimestamp()), 'When the submission was accepted'),
    email: v.string(),
    subject: v.string(),
    message: v.string(),
    fields: described(v.array(v.object({ name: v.string(), value: v.string() })), 'Custom fields, in the order the form sent them'),
    files: v.array(
      v.object({
        name: v.string(),
        type: described(v.string(), 'The content type the sender declared'),
        size: described(v.number(), 'Bytes'),
        sha256: described(v.string(), 'Hex SHA-256 of the stored bytes'),
        url: described(v.nullable(v.pipe(v.string(), v.url())), 'Presigned download link, valid for LINK_TTL_SECONDS; null for a withheld (infected) file'),
        url_expires_at: v.nullable(v.pipe(v.string(), v.isoTimestamp())),
        scan: v.nullable(FileScan),
      }),
    ),
    spam: described(
      v.nullable(SpamDetail),
      "The spam filter's verdict. The event waits for the email's check, or checks the submission itself when the email is held up; null: not checked (the key's filter is off, or the email is not to be sent). Held spam reaches a key's webhooks only if the key asks for it (spam_to_webhooks), or once its owner marks it not spam.",
    ),
    test: described(v.boolean(), 'true: a test message its key\'s owner sent from the console ("Send a test message"), not a visitor\'s'),
  }),
});

export const SubmissionBouncedSchema = v.object({
  type: v.literal('submission.bounced'),
  timestamp: described(v.pipe(v.string(), v.isoTimestamp()), 'When this attempt was made'),
  data: v.object({
    id: described(v.pipe(v.string(), v.uuid()), 'The submission id, as in its submission.created'),
    created_at: described(v.pipe(v.string(), v.isoTimestamp()), 'When the submission was accepted'),
    email: v.string(),
    subject: v.string(),
    bounce: v.pipe(BounceDetail, v.description('The hard bounce that came back for its notification email')),
  }),
});

const Endpoint = v.object({
  id: v.pipe(v.string(), v.uuid()),
  kind: described(v.picklist(ENDPOINT_KINDS), 'webhook: the signed generic event; otherwise the chat platform whose message format it gets'),
  url: described(
    v.string(),
    "A webhook's URL. A chat channel's request URL shortened: the part of the path that holds its secret cut to its last 4 characters, no query; a Telegram channel's bot token likewise",
  ),
  chat_id: described(v.nullable(v.string()), "A Telegram channel's chat; null otherwise"),
  enabled: v.boolean(),
  consecutive_failures: v.number(),
  disabled_at: v.nullable(v.string()),
  created_at: v.string(),
});
export const Delivery = v.object({
  delivery_id: v.pipe(v.string(), v.uuid()),
  endpoint_id: v.pipe(v.string(), v.uuid()),
  kind: v.picklist(ENDPOINT_KINDS),
  url: v.string(),
  submission_id: v.pipe(v.string(), v.uuid()),
  event: v.picklist(WEBHOOK_EVENTS),
  status: v.picklist(EMAIL_STATUSES),
  attempts: v.number(),
  last_response_code: described(v.nullable(v.number()), 'HTTP status of the last answer; null when none came'),
  last_error: v.nullable(v.string()),
  delivered_at: v.nullable(v.string()),
  created_at: v.string(),
});

const NewWebhook = {
  'application/json': {
    schema: {
      oneOf: [
        {
          title: 'Webhook',
          type: 'object',
          required: ['url'],
          properties: { kind: { const: 'webhook' }, url: { type: 'string', format: 'uri', maxLength: 2048 } },
          additionalProperties: false,
        },
        {
          title: 'Slack, Discord, Teams or Mattermost channel',
          description: 'The incoming-webhook URL the chat gives (Teams: a Workflows webhook trigger). Kept sealed; never answered in full.',
          type: 'object',
          required: ['kind', 'url'],
          properties: { kind: { enum: [...URL_CHAT_KINDS] }, url: { type: 'string', format: 'uri', maxLength: 2048 } },
          additionalProperties: false,
        },
        {
          title: 'Telegram chat',
          description: "A bot's token from @BotFather (kept sealed; never answered in full) and the chat it posts to: a number, or a public channel's @name.",
          type: 'object',
          required: ['kind', 'bot_token', 'chat_id'],
          properties: {
            kind: { const: 'telegram' },
            bot_token: { type: 'string', pattern: '^\\d{1,20}:[A-Za-z0-9_-]{30,100}$' },
            chat_id: { oneOf: [{ type: 'string', pattern: '^(-?\\d{1,20}|@[A-Za-z][A-Za-z0-9_]{3,31})$' }, { type: 'integer' }] },
          },
          additionalProperties: false,
        },
      ],
    },
  },
};
const addSummary = `Add a webhook endpoint (at most ${MAX_WEBHOOKS} per key; the answer carries its signing secret, this once) or a chat channel (${CHAT_KINDS.join(', ')}; at most ${MAX_CHAT_CHANNELS} per key)`;
const Created = v.object({
  webhook: Endpoint,
  secret: v.optional(v.pipe(v.string(), v.description("A webhook's signing secret, shown this once; a chat channel has none"))),
});
const WebhookPatch = {
  'application/json': { schema: { type: 'object', required: ['enabled'], properties: { enabled: { type: 'boolean' } }, additionalProperties: false } },
};
const deliveryQuery = [
  { name: 'submission', in: 'query', schema: { type: 'string', format: 'uuid' } },
  { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 200, default: 50 } },
];
const Resent = v.object({ success: v.literal(true), delivery_id: v.pipe(v.string(), v.uuid()), status: v.literal('queued') });
const page = (summary: string) => ({
  summary,
  responses: { 200: { description: 'HTML' }, 303: { description: 'Redirect to the page' }, 404: { description: 'HTML: not this owner’s' } },
});

export const webhookPaths = {
  '/admin/keys/{key}/webhooks': {
    get: {
      summary: "A key's webhook endpoints",
      security: adminSecurity,
      parameters: [keyParam],
      responses: { 200: { description: '{webhooks}', content: json(v.object({ webhooks: v.array(Endpoint) })) } },
    },
    post: {
      summary: addSummary,
      security: adminSecurity,
      parameters: [keyParam],
      requestBody: { required: true, content: NewWebhook },
      responses: {
        201: { description: '{webhook, secret?}', content: json(Created) },
        400: { description: 'Bad URL, bot token or chat id, or the key has its maximum of that kind' },
        404: { description: 'Unknown key' },
      },
    },
  },
  '/admin/keys/{key}/webhooks/{id}': {
    patch: {
      summary: 'Enable (count of failures reset) or disable an endpoint: {enabled}',
      security: adminSecurity,
      parameters: [keyParam, idParam('id')],
      requestBody: { required: true, content: WebhookPatch },
      responses: { 200: { description: '{webhook}' }, 404: { description: 'Unknown' } },
    },
    delete: {
      summary: 'Delete an endpoint and its delivery log',
      security: adminSecurity,
      parameters: [keyParam, idParam('id')],
      responses: { 204: { description: 'Deleted' }, 404: { description: 'Unknown' } },
    },
  },
  '/admin/keys/{key}/webhook-deliveries': {
    get: {
      summary: "A key's webhook deliveries, newest first (?submission=, ?limit= up to 200)",
      security: adminSecurity,
      parameters: [keyParam],
      responses: { 200: { description: '{deliveries}', content: json(v.object({ deliveries: v.array(Delivery) })) } },
    },
  },
  '/admin/keys/{key}/webhook-deliveries/{id}/resend': {
    post: {
      summary: 'Queue a failed delivery again',
      security: adminSecurity,
      parameters: [keyParam, idParam('id')],
      responses: { 202: { description: 'Queued' }, 404: { description: 'No failed delivery of this key with that id' } },
    },
  },
  '/owner/keys/{keyId}/webhooks': {
    get: { ...page("Owner console: a key's webhooks, chat channels and delivery log"), parameters: [idParam('keyId')] },
    post: {
      ...page(
        'Owner console: add a webhook (form: url; the answer shows the secret once) or a chat channel (form: kind and url, or kind=telegram, bot_token and chat_id)',
      ),
      parameters: [idParam('keyId')],
    },
  },
  '/owner/keys/{keyId}/webhooks/{id}': {
    post: { ...page('Owner console: enable, disable or delete a webhook or chat channel (form: action)'), parameters: [idParam('keyId'), idParam('id')] },
  },
  '/owner/keys/{keyId}/webhooks/{id}/test': {
    post: {
      ...page(
        'Owner console: send a sample message, marked as a test, to this webhook or chat channel now; the page says how it went (429 past 10 a key an hour)',
      ),
      parameters: [idParam('keyId'), idParam('id')],
    },
  },
  '/owner/keys/{keyId}/webhook-deliveries/{id}/resend': {
    post: { ...page('Owner console: re-send a failed delivery'), parameters: [idParam('keyId'), idParam('id')] },
  },
  '/owner/api/keys/{keyId}/webhooks': {
    get: {
      summary: "A key's webhook endpoints",
      security: ownerSecurity,
      parameters: [idParam('keyId')],
      responses: { 200: { description: '{webhooks}', content: json(v.object({ webhooks: v.array(Endpoint) })) }, 401: unauthorized, 404: notOwned },
    },
    post: {
      summary: addSummary,
      security: ownerWriteSecurity,
      parameters: [idParam('keyId')],
      requestBody: { required: true, content: NewWebhook },
      responses: {
        201: { description: '{webhook, secret?}', content: json(Created) },
        400: error('Bad URL, bot token or chat id, or the key has its maximum of that kind'),
        401: unauthorized,
        403: forbidden,
        404: notOwned,
      },
    },
  },
  '/owner/api/keys/{keyId}/webhooks/{id}': {
    patch: {
      summary: 'Enable (count of failures reset) or disable an endpoint',
      security: ownerWriteSecurity,
      parameters: [idParam('keyId'), idParam('id')],
      requestBody: { required: true, content: WebhookPatch },
      responses: {
        200: { description: '{webhook}', content: json(v.object({ webhook: Endpoint })) },
        400: error('Not {enabled: boolean}'),
        401: unauthorized,
        403: forbidden,
        404: notOwned,
      },
    },
    delete: {
      summary: 'Delete an endpoint and its delivery log',
      security: ownerWriteSecurity,
      parameters: [idParam('keyId'), idParam('id')],
      responses: { 204: { description: 'Deleted' }, 401: unauthorized, 403: forbidden, 404: notOwned },
    },
  },
  '/owner/api/keys/{keyId}/webhook-deliveries': {
    get: {
      summary: "A key's webhook deliveries, newest first (?submission=, ?limit= up to 200)",
      security: ownerSecurity,
      parameters: [idParam('keyId'), ...deliveryQuery],
      responses: {
        200: { description: '{deliveries}', content: json(v.object({ deliveries: v.array(Delivery) })) },
        400: error('Bad query'),
        401: unauthorized,
        404: notOwned,
      },
    },
  },
  '/owner/api/keys/{keyId}/webhooks/{id}/test': {
    post: {
      summary: 'Send a sample message, marked as a test, to this webhook or chat channel now (at most 10 a key an hour; not retried, no delivery row)',
      security: ownerWriteSecurity,
      parameters: [idParam('keyId'), idParam('id')],
      responses: {
        200: {
          description: 'How it went',
          content: json(v.object({ delivered: v.boolean(), detail: described(v.string(), 'HTTP 200; or the answer, a refused address, no answer in time') })),
        },
        401: unauthorized,
        403: forbidden,
        404: notOwned,
        429: error('10 test posts of this key in the hour: Retry-After says when the next can go'),
      },
    },
  },
  '/owner/api/keys/{keyId}/webhook-deliveries/{id}/resend': {
    post: {
      summary: 'Queue a failed delivery again',
      security: ownerWriteSecurity,
      parameters: [idParam('keyId'), idParam('id')],
      responses: {
        202: { description: 'Queued', content: json(Resent) },
        401: unauthorized,
        403: forbidden,
        404: error('No failed delivery of your key with that id'),
      },
    },
  },
};

/** OpenAPI 3.1 `webhooks`: what an endpoint receives. */
export const webhookEvents = {
  'submission.created': {
    post: {
      summary: 'A submission was accepted (one request per enabled generic endpoint of its key; a chat channel gets its platform’s message instead)',
      description:
        'Signed per Standard Webhooks: webhook-id (the same on every retry of a delivery), webhook-timestamp (Unix seconds) and webhook-signature = "v1,<base64 HMAC-SHA256 of id.timestamp.body>" keyed by the base64 part of the endpoint secret (whsec_…). Verify it (e.g. the standardwebhooks package), reject timestamps older than a few minutes, drop repeated webhook-ids. Answer 2xx within 10 s; 408, 429 (Retry-After honoured) and 5xx are retried with exponential backoff for about a day; any other answer fails the delivery. Redirects are not followed.',
      parameters: ['webhook-id', 'webhook-timestamp', 'webhook-signature'].map((name) => ({ name, in: 'header', required: true, schema: { type: 'string' } })),
      requestBody: { required: true, content: json(SubmissionCreatedSchema) },
      responses: { '2XX': { description: 'Delivered' } },
    },
  },
  'submission.bounced': {
    post: {
      summary:
        "A submission's notification email came back as a hard bounce after the relay took it (one request per enabled generic endpoint of its key; chat channels are not told)",
      description: 'Signed, retried and answered like submission.created.',
      parameters: ['webhook-id', 'webhook-timestamp', 'webhook-signature'].map((name) => ({ name, in: 'header', required: true, schema: { type: 'string' } })),
      requestBody: { required: true, content: json(SubmissionBouncedSchema) },
      responses: { '2XX': { description: 'Delivered' } },
    },
  },
};
