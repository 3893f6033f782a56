// The owner console's part of the OpenAPI document (src/api/site/openapi.ts spreads it into its paths):
// the pages briefly, the JSON API under /owner/api with its request and response schemas.
import * as v from 'valibot';
import { CAPTCHA_PROVIDERS, KEY_STATUSES } from '../../shared/keys/entities.ts';
import { EMAIL_STATUSES } from '../../shared/deliveries/delivery-columns.ts';
import { SPAM_FILTER_LEVELS } from '../../shared/words/spam-kinds.ts';
import { SESSION_TTL_DAYS, SIGN_IN_LINK_TTL_MINUTES } from '../../shared/owners/owners.ts';
import {
  AddedRecipient,
  error,
  forbidden,
  idParam,
  json,
  jsonSchema,
  notOwned,
  ownerSecurity,
  ownerWriteSecurity,
  Submission,
  unauthorized,
} from '../site/openapi-parts.ts';
import { MAX_ADDED_RECIPIENTS } from '../../shared/recipients/recipients.ts';
import { KeyPatchSchema } from '../keys/key-patch.ts';
import { KEY_LABEL_MAX } from '../../shared/keys/keys.ts';
import { AUTORESPONSE_SUBJECT_MAX, AUTORESPONSE_TEXT_MAX } from '../../shared/autoresponses/autoresponse-settings.ts';
import { OwnerSignInSchema } from './owner-session-pages.ts';
import { SessionRequestSchema } from './owner-api-session-routes.ts';
import { SpamMarkSchema } from './owner-api-submission-routes.ts';
import { ENDPOINT_KINDS } from '../../shared/webhooks/endpoint-kinds.ts';
import { WEBHOOK_EVENTS } from '../../shared/webhooks/entities.ts';

const Session = v.object({
  email: v.pipe(v.string(), v.description('The address whose keys the session reaches')),
  expires_at: v.pipe(v.string(), v.isoTimestamp()),
  csrf_token: v.pipe(v.string(), v.description('Send it as X-CSRF-Token with every write')),
});
const Key = v.object({
  id: v.pipe(v.string(), v.uuid()),
  key: v.pipe(
    v.nullable(v.string()),
    v.description('null when the service cannot read it (sealed under another SECRET, or damaged); key_unavailable then says so'),
  ),
  key_unavailable: v.optional(v.string()),
  label: v.pipe(v.nullable(v.string()), v.description(`The owner's name for the key (one line, at most ${KEY_LABEL_MAX} characters), or null`)),
  subject_prefix: v.pipe(v.boolean(), v.description("Whether the key's emails carry the label before their subject")),
  autoresponse: v.pipe(
    v.object({
      enabled: v.boolean(),
      subject: v.pipe(v.nullable(v.string()), v.description(`One line, at most ${AUTORESPONSE_SUBJECT_MAX} characters`)),
      text: v.pipe(v.nullable(v.string()), v.description(`Plain text, at most ${AUTORESPONSE_TEXT_MAX} characters`)),
    }),
    v.description('The confirmation email to the visitor (off by default); it carries no text a visitor wrote'),
  ),
  email_subject: v.pipe(v.nullable(v.string()), v.description("The subject pattern of the key's emails, or null for the default")),
  email_field_order: v.pipe(v.array(v.string()), v.description('Custom fields the email shows first, in this order')),
  email_hidden_fields: v.pipe(v.array(v.string()), v.description('Custom fields the email leaves out (kept in the record)')),
  email_files: v.pipe(v.picklist(['attach', 'link']), v.description('attach: attached while they fit, else linked; link: always linked')),
  status: v.picklist(KEY_STATUSES),
  email: v.string(),
  use_domain: v.boolean(),
  domains: v.array(v.string()),
  captcha: v.nullable(v.picklist(CAPTCHA_PROVIDERS)),
  spam_filter: v.pipe(v.picklist(SPAM_FILTER_LEVELS), v.description('off: every message is emailed; strict holds from a lower score than normal')),
  spam_to_webhooks: v.pipe(v.boolean(), v.description('Whether the webhooks also get the messages held as spam')),
  recipients: v.pipe(
    v.array(AddedRecipient),
    v.description(
      `The addresses that get a copy of each message besides the key's own (at most ${MAX_ADDED_RECIPIENTS}); they get the emails only, never the console or the key's settings`,
    ),
  ),
  created_at: v.string(),
  updated_at: v.string(),
});
/** The list filters (src/api/owners/filters.ts) as query parameters. */
const filterParams = [
  {
    name: 'q',
    in: 'query',
    description: "Full-text search: words that must all begin a word of the visitor's address, the subject, the message or a field's value",
    schema: { type: 'string', maxLength: 200 },
  },
  { name: 'status', in: 'query', description: 'Only the messages whose email has this status', schema: { type: 'string', enum: [...EMAIL_STATUSES] } },
  { name: 'from', in: 'query', description: 'Received on or after this UTC day (YYYY-MM-DD)', schema: { type: 'string', format: 'date' } },
  { name: 'to', in: 'query', description: 'Received on or before this UTC day (YYYY-MM-DD)', schema: { type: 'string', format: 'date' } },
];
const SubmissionPage = v.object({ submissions: v.array(Submission), next_cursor: v.nullable(v.string()) });
/** A chat or webhook delivery of one submission, as ./webhook-outcomes.ts shows it. */
const WebhookOutcome = v.object({
  delivery_id: v.pipe(v.string(), v.uuid()),
  endpoint_id: v.pipe(v.string(), v.uuid()),
  kind: v.pipe(v.picklist(ENDPOINT_KINDS), v.description('webhook, or the chat platform')),
  platform: v.pipe(v.string(), v.description('Slack, Discord, Microsoft Teams, Mattermost, Telegram or Webhook')),
  host: v.pipe(v.string(), v.description("The host of the endpoint's URL (never a chat URL's secret)")),
  event: v.picklist(WEBHOOK_EVENTS),
  status: v.pipe(
    v.picklist(EMAIL_STATUSES),
    v.description('queued, sending, retrying, sent (delivered: a 2xx answer), failed, skipped (not posted: last_error says why)'),
  ),
  attempts: v.number(),
  last_response_code: v.pipe(v.nullable(v.number()), v.description('The HTTP status of the last answer; null when none came')),
  last_error: v.nullable(v.string()),
  delivered_at: v.nullable(v.string()),
  created_at: v.string(),
});
const OneSubmission = v.object({
  ...Submission.entries,
  webhooks: v.pipe(v.array(WebhookOutcome), v.description('Each chat and webhook delivery of this submission, newest first')),
});

const page = (summary: string) => ({ summary, responses: { 200: { description: 'HTML' }, 303: { description: 'Not signed in: to /owner' } } });
const form = (summary: string) => ({
  summary,
  requestBody: {
    required: true,
    content: { 'application/x-www-form-urlencoded': { schema: { type: 'object', properties: { csrf_token: { type: 'string' } } } } },
  },
  responses: { 303: { description: 'Done: to the page that shows it' }, 403: forbidden, 404: { description: 'HTML: not among your keys' } },
});
const crossSite = error('Cross-site request');
const rateLimited = error('Rate limited');

export const ownerSecuritySchemes = {
  ownerSession: { type: 'apiKey', in: 'cookie', name: 'owner_session', description: `The owner console's session (${SESSION_TTL_DAYS} days)` },
  ownerCsrf: { type: 'apiKey', in: 'header', name: 'X-CSRF-Token', description: 'csrf_token of GET /owner/api/session' },
};

export const ownerPaths = {
  '/owner': { get: { summary: 'Owner console: the sign-in page (to /owner/keys when signed in)', responses: { 200: { description: 'HTML' } } } },
  '/owner/sign-in': {
    post: {
      summary: `Email a sign-in link (single use, ${SIGN_IN_LINK_TTL_MINUTES} minutes) to an address that holds keys`,
      description: 'The answer is the same whether or not the address holds keys, and past its hourly email cap. Rate-limited per client IP.',
      requestBody: { required: true, content: { ...json(OwnerSignInSchema), 'application/x-www-form-urlencoded': { schema: jsonSchema(OwnerSignInSchema) } } },
      responses: {
        200: { description: 'HTML page for a form; JSON {success: true, message}', content: json(v.object({ success: v.literal(true), message: v.string() })) },
        400: error('Not an email address'),
        403: crossSite,
        429: rateLimited,
      },
    },
  },
  '/owner/link': {
    get: {
      summary: 'The page behind the emailed link: a button that signs in (the GET uses nothing)',
      parameters: [{ name: 'token', in: 'query', required: true, schema: { type: 'string' } }],
      responses: { 200: { description: 'HTML' }, 400: { description: 'HTML: no token' } },
    },
    post: {
      summary: 'Use the link: sets the session cookie, then to /owner/keys',
      requestBody: { required: true, content: { 'application/x-www-form-urlencoded': { schema: jsonSchema(SessionRequestSchema) } } },
      responses: { 303: { description: 'Signed in' }, 400: { description: 'HTML: used, expired or forged link' }, 403: crossSite, 429: rateLimited },
    },
  },
  '/owner/confirm': {
    post: { ...form("Confirm the address's mailbox wants its messages (recipient consent) and release the held ones"), security: ownerWriteSecurity },
  },
  '/owner/sign-out': { post: { ...form('End the session on the server'), security: ownerWriteSecurity } },
  '/owner/keys': { get: { ...page('Your keys, their state and settings'), security: ownerSecurity } },
  '/owner/keys/{keyId}/settings': {
    get: {
      ...page("A key's settings, in sections (email, autoresponse, spam, captcha and sites, recipients, chat and webhooks)"),
      security: ownerSecurity,
      parameters: [idParam('keyId')],
    },
  },
  '/owner/keys/{keyId}/autoresponse-test': {
    post: {
      ...form('Send the saved autoresponse to the owner, as a visitor would get it, "[Test]" before its subject (429 past 5 a key an hour)'),
      security: ownerWriteSecurity,
      parameters: [idParam('keyId')],
    },
  },
  '/owner/keys/{keyId}/preview': {
    post: {
      ...form('The settings page previews of the typed values (the same fields as action=save), saving nothing'),
      responses: {
        200: {
          description: 'JSON: email {subject, fields} and autoresponse {subject, paragraphs, closing}, each else {refused: the reason a save would give}',
        },
        403: forbidden,
        404: { description: 'HTML: not among your keys' },
      },
      security: ownerWriteSecurity,
      parameters: [idParam('keyId')],
    },
  },
  '/owner/keys/{keyId}/test-message': {
    post: {
      ...form('Send a test message through every delivery of the key, marked as a test and counted nowhere (429 past 10 a key an hour)'),
      security: ownerWriteSecurity,
      parameters: [idParam('keyId')],
    },
  },
  '/owner/keys/{keyId}': {
    post: {
      ...form(
        'Change a key: action=save (label, subject_prefix=yes, autoresponse_enabled=yes, autoresponse_subject, autoresponse_text, email_subject, email_field_order and email_hidden_fields (one name a line), email_files, domains, captcha, spam_filter, spam_to_webhooks=yes), disable, enable or delete',
      ),
      security: ownerWriteSecurity,
      parameters: [idParam('keyId')],
    },
  },
  '/owner/keys/{keyId}/recipients': {
    post: {
      ...form('Add email=ADDRESS to the key’s recipients; it is emailed a request to confirm (429 past the bounds on those requests)'),
      security: ownerWriteSecurity,
      parameters: [idParam('keyId')],
    },
  },
  '/owner/keys/{keyId}/recipients/{recipientId}/remove': {
    post: {
      ...form('Remove an added recipient: it gets no more copies'),
      security: ownerWriteSecurity,
      parameters: [idParam('keyId'), idParam('recipientId')],
    },
  },
  '/owner/keys/{keyId}/submissions': {
    get: {
      ...page("A key's messages as a list, newest first, paged (?cursor=): received, from, subject, status; searched and filtered"),
      security: ownerSecurity,
      parameters: [idParam('keyId'), ...filterParams],
    },
  },
  '/owner/keys/{keyId}/spam': {
    get: { ...page("A key's Spam view: the messages held as spam, newest first"), security: ownerSecurity, parameters: [idParam('keyId'), ...filterParams] },
  },
  '/owner/keys/{keyId}/submissions.csv': {
    get: {
      summary: "A key's messages as CSV: those that pass the filters, all without any",
      security: ownerSecurity,
      parameters: [idParam('keyId'), ...filterParams],
      responses: { 200: { description: 'text/csv attachment' }, 404: { description: 'Not among your keys' } },
    },
  },
  '/owner/submissions/{id}': {
    get: { ...page('One message: the whole record, its delivery history, files, and its actions'), security: ownerSecurity, parameters: [idParam('id')] },
  },
  '/owner/overview': {
    get: { ...page("All your keys' overview: messages per day over 30 days by outcome (an SVG chart), totals, a line per key"), security: ownerSecurity },
  },
  '/owner/keys/{keyId}/overview': {
    get: {
      ...page("A key's overview: messages per day over 30 days by outcome (an SVG chart), totals, the last message's time"),
      security: ownerSecurity,
      parameters: [idParam('keyId')],
    },
  },
  '/owner/submissions/{id}/files/{fileId}': {
    get: {
      summary: 'A file, as a download (attachment, stored type, nosniff, sandbox CSP)',
      security: ownerSecurity,
      parameters: [idParam('id'), idParam('fileId')],
      responses: {
        200: { description: 'The bytes' },
        404: { description: 'Not among your keys' },
        410: { description: 'Withheld: the virus scan found it infected (deleted or quarantined)' },
      },
    },
  },
  '/owner/submissions/{id}/resend': {
    post: { ...form('Re-send a failed email through the queue'), security: ownerWriteSecurity, parameters: [idParam('id')] },
  },
  '/owner/submissions/{id}/copies/{copyId}/resend': {
    post: {
      ...form("Re-send one recipient's failed, bounced or suppressed copy"),
      security: ownerWriteSecurity,
      parameters: [idParam('id'), idParam('copyId')],
    },
  },
  '/owner/submissions/{id}/spam-mark': {
    post: {
      ...form('Mark a message: mark=ham (not spam: a held message is sent) or mark=spam; taught to the filter now within the hourly allowance, later past it'),
      security: ownerWriteSecurity,
      parameters: [idParam('id')],
    },
  },
  '/owner/submissions/{id}/delete': { post: { ...form('Delete a message with its files'), security: ownerWriteSecurity, parameters: [idParam('id')] } },

  '/owner/api/session': {
    post: {
      summary: "Use a sign-in link's token: sets the session cookie",
      requestBody: { required: true, content: json(SessionRequestSchema) },
      responses: { 200: { description: 'The session', content: json(Session) }, 400: error('Used, expired or forged link'), 403: crossSite, 429: rateLimited },
    },
    get: {
      summary: 'The session: address, expiry, CSRF token',
      security: ownerSecurity,
      responses: { 200: { description: 'The session', content: json(Session) }, 401: unauthorized },
    },
    delete: {
      summary: 'Sign out: ends the session on the server',
      security: ownerWriteSecurity,
      responses: { 204: { description: 'Signed out' }, 401: unauthorized, 403: forbidden },
    },
  },
  '/owner/api/keys': {
    get: {
      summary: "The session's keys, and whether the address confirmed it wants its messages",
      security: ownerSecurity,
      responses: {
        200: {
          description: 'Keys',
          content: json(
            v.object({
              email: v.string(),
              mailbox_confirmed: v.boolean(),
              held: v.pipe(v.number(), v.description('Messages waiting for the confirmation')),
              keys: v.array(Key),
            }),
          ),
        },
        401: unauthorized,
      },
    },
  },
  '/owner/api/confirm': {
    post: {
      summary: "Confirm the address's mailbox (recipient consent) and release its held messages",
      security: ownerWriteSecurity,
      responses: { 200: { description: 'How many were released', content: json(v.object({ released: v.number() })) }, 401: unauthorized, 403: forbidden },
    },
  },
  '/owner/api/keys/{keyId}': {
    patch: {
      summary:
        'Change a key: state (active ↔ disabled, → deleted), domains, captcha, spam filter, label, subject prefix, autoresponse, email layout, added recipients',
      security: ownerWriteSecurity,
      parameters: [idParam('keyId')],
      requestBody: { required: true, content: json(KeyPatchSchema) },
      responses: {
        200: { description: 'The key', content: json(Key) },
        400: error(`Invalid change (among them a 6th recipient: at most ${MAX_ADDED_RECIPIENTS})`),
        401: unauthorized,
        403: forbidden,
        404: notOwned,
        429: error('An added address was asked to confirm as often as it may be (per key, per address across keys, per hour): nothing was changed'),
      },
    },
  },
  '/owner/api/keys/{keyId}/submissions': {
    get: {
      summary: "A key's submissions, newest first, paged by cursor",
      security: ownerSecurity,
      parameters: [
        idParam('keyId'),
        { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 100, default: 25 } },
        { name: 'cursor', in: 'query', schema: { type: 'string' } },
        { name: 'view', in: 'query', description: 'spam: only the messages held as spam', schema: { type: 'string', enum: ['all', 'spam'], default: 'all' } },
        ...filterParams,
      ],
      responses: { 200: { description: 'A page', content: json(SubmissionPage) }, 400: error('Invalid filter'), 401: unauthorized, 404: notOwned },
    },
  },
  '/owner/api/keys/{keyId}/submissions.csv': {
    get: {
      summary: "A key's submissions as CSV: those that pass the filters, all without any",
      security: ownerSecurity,
      parameters: [idParam('keyId'), ...filterParams],
      responses: { 200: { description: 'text/csv attachment' }, 400: error('Invalid filter'), 401: unauthorized, 404: notOwned },
    },
  },
  '/owner/api/submissions/{id}': {
    get: {
      summary: 'One submission with its delivery status and its chat and webhook deliveries',
      security: ownerSecurity,
      parameters: [idParam('id')],
      responses: { 200: { description: 'The submission', content: json(OneSubmission) }, 401: unauthorized, 404: notOwned },
    },
    delete: {
      summary: 'Delete a submission with its files',
      security: ownerWriteSecurity,
      parameters: [idParam('id')],
      responses: { 204: { description: 'Deleted' }, 401: unauthorized, 403: forbidden, 404: notOwned },
    },
  },
  '/owner/api/submissions/{id}/files/{fileId}': {
    get: {
      summary: 'A file, as a download',
      security: ownerSecurity,
      parameters: [idParam('id'), idParam('fileId')],
      responses: {
        200: { description: 'The bytes (attachment)' },
        401: unauthorized,
        404: notOwned,
        410: error('Withheld: the virus scan found it infected (deleted or quarantined)'),
      },
    },
  },
  '/owner/api/submissions/{id}/resend': {
    post: {
      summary: 'Re-send a failed email through the queue',
      security: ownerWriteSecurity,
      parameters: [idParam('id')],
      responses: {
        200: { description: 'The submission, queued again', content: json(Submission) },
        401: unauthorized,
        403: forbidden,
        404: notOwned,
        409: error('The email has not failed'),
      },
    },
  },
  '/owner/api/submissions/{id}/copies/{copyId}/resend': {
    post: {
      summary:
        "Re-send one added recipient's failed, bounced or suppressed copy through the queue; the owner's email and the other copies are left as they are",
      security: ownerWriteSecurity,
      parameters: [idParam('id'), idParam('copyId')],
      responses: {
        200: { description: 'The submission, the copy queued again', content: json(Submission) },
        401: unauthorized,
        403: forbidden,
        404: notOwned,
        409: error('The copy has not failed, or its address is no longer a recipient of the key'),
      },
    },
  },
  '/owner/api/submissions/{id}/spam-mark': {
    post: {
      summary:
        'Mark a submission spam or not spam (ham): a held one marked ham is queued and emailed; taught to the filter now within the hourly allowance, later past it',
      security: ownerWriteSecurity,
      parameters: [idParam('id')],
      requestBody: { required: true, content: json(SpamMarkSchema) },
      responses: {
        200: {
          description: 'What the mark did',
          content: json(
            v.object({
              teaching: v.pipe(
                v.picklist(['taught', 'known', 'capped', 'failed', 'off']),
                v.description(
                  "taught; known: nothing to learn (learned before, or too short); capped: past the key's hourly allowance, taught later; failed: filter unavailable, taught later; off: no filter",
                ),
              ),
              released: v.pipe(v.boolean(), v.description('A message held as spam is now queued to be emailed')),
              submission: Submission,
            }),
          ),
        },
        400: error('Invalid mark'),
        401: unauthorized,
        403: forbidden,
        404: notOwned,
      },
    },
  },
};
