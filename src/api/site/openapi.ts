// The OpenAPI 3.1 document, generated from the same valibot schemas that validate the requests
// (one source of truth), plus valibot descriptions of the responses. Its paths are the routes the
// app's routers register: one that has no description here still appears, marked
// `x-undescribed`, and a test keeps that list empty.
import * as v from 'valibot';
import { EMAIL_STATUSES } from '../../shared/infra/db/entities.ts';
import { adminSecurity, ErrorBody, idParam, json, jsonSchema, keyParam } from './openapi-parts.ts';
import { ownerPaths, ownerSecuritySchemes, Submission } from '../owners/openapi.ts';
import { FlushRequestSchema } from '../admin/admin-routes.ts';
import { KeyPatchSchema } from '../../shared/keys/key-patch.ts';
import { KeyRequestSchema } from '../keys/key-routes.ts';
import { SubmissionFieldsSchema } from '../submissions/input.ts';
import { Delivery, webhookEvents, webhookPaths } from '../webhooks/webhooks-openapi.ts';

// The public endpoints' error body: the shared one, described, and with the request id of a 500.
const FormError = v.object({
  ...ErrorBody.entries,
  errors: v.pipe(ErrorBody.entries.errors, v.description('Field name (or __all__) → messages')),
  request_id: v.optional(v.pipe(v.string(), v.description('On 500 only: the id under which the log has the detail'))),
});
const KeyLimitError = v.object({ error: v.string() });
const GenerateKeyResponse = v.object({ success: v.literal(true), message: v.string(), key: v.string(), keys_count: v.number() });
const GetKeysResponse = v.object({ success: v.literal(true), message: v.string(), keys_count: v.number() });
const SubmissionResponse = v.object({
  success: v.literal(true),
  message: v.string(),
  submission_id: v.pipe(v.string(), v.uuid()),
  attachments: v.number(),
  email_status: v.picklist(EMAIL_STATUSES),
});

// The operator's record: the owner's, with the key's value and the email's address and Message-ID.
const { key_id: _keyId, attachments: _files, ...submissionEntries } = Submission.entries;
const AdminSubmission = v.object({
  ...submissionEntries,
  key_id: v.pipe(v.string(), v.uuid()),
  key: v.pipe(v.string(), v.description('The key itself, as GET /admin/keys shows it')),
  recipient: v.pipe(v.string(), v.description("The address the email goes to: the key's")),
  message_id: v.pipe(
    v.nullable(v.string()),
    v.description('The Message-ID the relay accepted; before that, the one the email carries (null: not to be emailed, `skipped`)'),
  ),
  attachments: v.array(v.object({ filename: v.string(), size: v.number(), content_type: v.string() })),
});
const FlushResult = v.object({
  promoted: v.pipe(v.number(), v.description('Tried now')),
  scheduled: v.pipe(v.number(), v.description('Brought forward to a later second of the pace')),
  unchanged: v.pipe(v.number(), v.description('Their timers end before their turn: left as they were')),
  per_second: v.number(),
  last_at: v.pipe(v.nullable(v.pipe(v.string(), v.isoTimestamp())), v.description('When the last one brought forward comes due')),
});

const formError = (description: string) => ({ description, content: json(FormError) });
const CORS_PREFLIGHT = {
  summary: 'CORS preflight',
  responses: { 204: { description: 'Access-Control-Allow-Origin: *, Allow-Methods: POST, OPTIONS, Allow-Headers: Content-Type, X-Requested-With, Accept' } },
};
const rateLimited = formError('Too many requests (1 per 3 seconds per client IP by default); Retry-After says when to retry');
/** PostgreSQL unreachable (stopped, restarting): nothing was saved; Retry-After says when to try again. */
const unavailable = {
  ...formError('The service is unavailable for a moment (its database cannot be reached); nothing was saved'),
  headers: { 'Retry-After': { description: 'Seconds to wait (5)', schema: { type: 'integer' } } },
};

/** A route as a router registered it: its methods and its path pattern (`/admin/keys/:key`). */
export type RegisteredRoute = { methods: string[]; path: string };

type Operation = { summary: string; responses: Record<string, unknown>; [detail: string]: unknown };
type Paths = Record<string, Record<string, Operation>>;

/** Static files of the pages: not part of the API. */
const isAsset = (path: string) => path.startsWith('/assets/') || path === '/favicon.svg';

/** The described operations, plus every registered route that has no description. */
function withRegisteredRoutes(described: Paths, routes: RegisteredRoute[]): Paths {
  const paths: Paths = structuredClone(described);
  for (const route of routes) {
    if (isAsset(route.path)) continue;
    const path = route.path.replace(/:(\w+)/g, '{$1}');
    for (const method of route.methods.map((name) => name.toLowerCase()).filter((name) => name !== 'head')) {
      paths[path] ??= {};
      paths[path][method] ??= { summary: `${method.toUpperCase()} ${path}`, 'x-undescribed': true, responses: {} };
    }
  }
  return paths;
}

export function buildOpenApi(publicUrl: string, routes: RegisteredRoute[]) {
  const submissionBody = { ...jsonSchema(SubmissionFieldsSchema), additionalProperties: { description: 'Any other field is stored as a custom field' } };
  return {
    openapi: '3.1.0',
    info: {
      title: 'Contact form service',
      version: '1',
      description:
        'Accepts contact-form submissions, stores them, and delivers each as an email to the owner of the verification key, and as a signed webhook to the endpoints the owner set.',
    },
    servers: [{ url: publicUrl }],
    components: {
      securitySchemes: { adminToken: { type: 'http', scheme: 'bearer', description: 'ADMIN_TOKEN' }, ...ownerSecuritySchemes },
    },
    paths: withRegisteredRoutes(
      {
        '/': {
          get: { summary: 'The start page: request a key, try a live contact form', responses: { 200: { description: 'HTML' } } },
          post: {
            summary: 'Generate a verification key, or email all active keys of an address',
            requestBody: { required: true, content: json(KeyRequestSchema) },
            responses: {
              200: {
                description: 'generateKey: the new key; getKeys: how many keys were emailed',
                content: { 'application/json': { schema: { oneOf: [jsonSchema(GenerateKeyResponse), jsonSchema(GetKeysResponse)] } } },
              },
              400: {
                description: 'Invalid request, or the address already holds 10 keys',
                content: { 'application/json': { schema: { oneOf: [jsonSchema(FormError), jsonSchema(KeyLimitError)] } } },
              },
              429: formError('Rate limited, or too many emails to this address this hour'),
              503: unavailable,
            },
          },
          options: CORS_PREFLIGHT,
        },
        '/api/contact-api/': {
          post: {
            summary: 'Submit a contact form',
            description:
              'Plain HTML form posts (urlencoded or multipart, Accept preferring text/html, no X-Requested-With) get 303 redirects to success_url / error_url instead of JSON.',
            requestBody: {
              required: true,
              content: {
                'application/json': { schema: submissionBody },
                'application/x-www-form-urlencoded': { schema: submissionBody },
                'multipart/form-data': {
                  schema: {
                    ...submissionBody,
                    additionalProperties: {
                      description: 'Custom fields, and files (at most 10, 10 MB each) under any field name',
                      oneOf: [{ type: 'string' }, { type: 'string', contentMediaType: 'application/octet-stream' }],
                    },
                  },
                },
              },
            },
            responses: {
              200: { description: 'Saved', content: json(SubmissionResponse) },
              303: { description: 'Redirect for a plain HTML form post' },
              400: formError('Missing or invalid fields, domain mismatch, too many files'),
              403: formError('Unknown, disabled or deleted key'),
              413: formError('Body or file too large'),
              415: formError('Unsupported content type'),
              429: rateLimited,
              500: formError('Unexpected failure; the body carries request_id'),
              503: unavailable,
            },
          },
          options: CORS_PREFLIGHT,
        },
        '/healthz': { get: { summary: 'Liveness', responses: { 200: { description: 'The process is alive' } } } },
        '/readyz': {
          get: {
            summary: 'Readiness',
            responses: { 200: { description: 'PostgreSQL, Redis and storage answer' }, 503: { description: 'Something is down: {down: [...]}' } },
          },
        },
        '/metrics': {
          get: {
            summary: 'Prometheus metrics',
            security: adminSecurity,
            responses: {
              200: { description: 'Text exposition format' },
              401: { description: 'No valid admin token' },
              404: { description: 'ADMIN_TOKEN is not set' },
            },
          },
        },
        '/admin/keys': {
          get: {
            summary: "List an address's keys",
            security: adminSecurity,
            parameters: [{ name: 'email', in: 'query', required: true, schema: { type: 'string', format: 'email' } }],
            responses: {
              200: { description: 'The keys with their states; a key that cannot be read has key: null and key_unavailable saying why' },
              401: formError('No or wrong token'),
            },
          },
        },
        '/admin/keys/{key}': {
          patch: {
            summary: 'Change a key: state (active ↔ disabled, → deleted), domains, captcha, spam filter',
            security: adminSecurity,
            parameters: [keyParam],
            requestBody: { required: true, content: json(KeyPatchSchema) },
            responses: {
              200: { description: 'The key record' },
              400: formError('Invalid change'),
              401: formError('No or wrong token'),
              404: formError('Unknown key'),
            },
          },
        },
        '/admin/submissions': {
          get: {
            summary: 'Submissions, newest first, paged by cursor',
            security: adminSecurity,
            parameters: ['key', 'status', 'limit', 'cursor'].map((name) => ({ name, in: 'query', required: false, schema: { type: 'string' } })),
            responses: {
              200: { description: 'A page', content: json(v.object({ submissions: v.array(AdminSubmission), next_cursor: v.nullable(v.string()) })) },
              401: formError('No or wrong token'),
            },
          },
        },
        '/admin/submissions/{id}': {
          get: {
            summary: 'One submission with its key, recipient, Message-ID, delivery status and history',
            security: adminSecurity,
            parameters: [idParam('id')],
            responses: {
              200: { description: 'The submission record', content: json(AdminSubmission) },
              401: formError('No or wrong token'),
              404: formError('Unknown submission'),
            },
          },
        },
        '/admin/submissions/{id}/webhook-deliveries': {
          get: {
            summary: "A submission's webhook deliveries, whatever endpoint, newest first (?limit= up to 200, 50 by default)",
            security: adminSecurity,
            parameters: [idParam('id'), { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 200, default: 50 } }],
            responses: {
              200: { description: '{deliveries}', content: json(v.object({ deliveries: v.array(Delivery) })) },
              400: formError('Bad limit'),
              401: formError('No or wrong token'),
              404: formError('Unknown submission'),
            },
          },
        },
        '/admin/deliveries/flush': {
          post: {
            summary: 'Try now the emails waiting on a retry timer, paced (after an outage)',
            description:
              'The first per_second jobs (those due soonest) are promoted at once, the next per_second get timers ending a second later, and so on; a timer that ends sooner is kept. The pace is written into the jobs, so it holds whichever workers take them. The workers do the same by themselves when the SMTP circuit breaker closes.',
            security: adminSecurity,
            requestBody: { required: false, content: json(FlushRequestSchema) },
            responses: {
              200: { description: 'What the flush did', content: json(FlushResult) },
              400: formError('Bad pace'),
              401: formError('No or wrong token'),
              415: formError('A body that is not JSON'),
              503: formError('Redis cannot be reached: nothing was flushed'),
            },
          },
        },
        '/admin/submissions/{id}/resend': {
          post: {
            summary: 'Re-send a failed, bounced or suppressed email (a suppressed mailbox stays so until its owner signs in)',
            security: adminSecurity,
            parameters: [idParam('id')],
            responses: {
              200: { description: 'The submission record, `queued`, its history kept', content: json(AdminSubmission) },
              401: formError('No or wrong token'),
              404: formError('Unknown submission'),
              409: formError('Not failed, bounced or suppressed'),
            },
          },
        },
        '/admin/submissions.csv': {
          get: {
            summary: "A key's submissions as CSV, custom fields as columns (streamed; formula-safe cells)",
            security: adminSecurity,
            parameters: [{ name: 'key', in: 'query', required: true, schema: { type: 'string' } }],
            responses: { 200: { description: 'text/csv attachment' }, 400: formError('No key given'), 401: formError('No or wrong token') },
          },
        },
        '/admin/queues': {
          get: {
            summary: 'The queue dashboard (bull-board); HTTP Basic with the token as password for browsers',
            security: adminSecurity,
            responses: { 200: { description: 'HTML' }, 401: formError('No or wrong token') },
          },
        },
        '/confirm': {
          get: {
            summary: 'Recipient consent: the page behind the link in key emails (changes nothing; its button posts)',
            parameters: ['address', 'token'].map((name) => ({ name, in: 'query', required: true, schema: { type: 'string' } })),
            responses: { 200: { description: 'HTML page with a confirm button' }, 400: { description: 'HTML: the link is not valid' } },
          },
          post: {
            summary: 'Recipient consent: confirm the mailbox (lasting) and release its held submissions',
            requestBody: {
              required: true,
              content: {
                'application/x-www-form-urlencoded': {
                  schema: { type: 'object', required: ['address', 'token'], properties: { address: { type: 'string' }, token: { type: 'string' } } },
                },
              },
            },
            responses: { 200: { description: 'HTML: confirmed' }, 400: { description: 'HTML: the link is not valid' }, 429: rateLimited },
          },
        },
        '/contact/success/': {
          get: { summary: 'The page a plain HTML form lands on after a submission', responses: { 200: { description: 'HTML' } } },
        },
        '/contact/error/': {
          get: { summary: 'The page a plain HTML form lands on after a refusal (?error=)', responses: { 200: { description: 'HTML' } } },
        },
        '/openapi.json': { get: { summary: 'This document', responses: { 200: { description: 'OpenAPI 3.1 JSON' } } } },
        '/docs': { get: { summary: 'This document as a page', responses: { 200: { description: 'HTML' } } } },
        ...ownerPaths,
        ...webhookPaths,
      },
      routes,
    ),
    webhooks: webhookEvents,
  };
}
