// The operator API's part of the OpenAPI document (src/api/site/openapi.ts composes it): keys,
// submissions, re-sends, the retry flush, the CSV export and the queue dashboard under /admin.
import * as v from 'valibot';
import { adminSecurity, FileScan, formError, idParam, json, keyParam, Submission } from '../site/openapi-parts.ts';
import { Delivery } from '../webhooks/webhooks-openapi.ts';
import { FlushRequestSchema } from './admin-submissions.ts';
import { VisitorEraseSchema } from './visitor-routes.ts';
import { AdminKeyPatchSchema } from '../keys/key-patch.ts';

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
  attachments: v.array(v.object({ filename: v.string(), size: v.number(), content_type: v.string(), scan: v.nullable(FileScan) })),
});
const FlushResult = v.object({
  promoted: v.pipe(v.number(), v.description('Tried now')),
  scheduled: v.pipe(v.number(), v.description('Brought forward to a later second of the pace')),
  unchanged: v.pipe(v.number(), v.description('Their timers end before their turn: left as they were')),
  per_second: v.number(),
  last_at: v.pipe(v.nullable(v.pipe(v.string(), v.isoTimestamp())), v.description('When the last one brought forward comes due')),
});

export const adminPaths = {
  '/admin/keys': {
    get: {
      summary: "List an address's keys",
      security: adminSecurity,
      parameters: [{ name: 'email', in: 'query', required: true, schema: { type: 'string', format: 'email' } }],
      responses: {
        200: {
          description: 'The keys with their states and added recipients; a key that cannot be read has key: null and key_unavailable saying why',
        },
        401: formError('No or wrong token'),
      },
    },
  },
  '/admin/keys/{key}': {
    patch: {
      summary: 'Change a key: state (active ↔ disabled, → deleted), domains, captcha, spam filter, autoresponse and its review, email layout, added recipients',
      security: adminSecurity,
      parameters: [keyParam],
      requestBody: { required: true, content: json(AdminKeyPatchSchema) },
      responses: {
        200: { description: 'The key record, with its added recipients' },
        400: formError('Invalid change'),
        429: formError('An added address was asked to confirm as often as it may be: nothing was changed'),
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
  '/admin/submissions/{id}/copies/{copyId}/resend': {
    post: {
      summary: "Re-send one added recipient's failed, bounced or suppressed copy; the owner's email and the other copies are left as they are",
      security: adminSecurity,
      parameters: [idParam('id'), idParam('copyId')],
      responses: {
        200: { description: 'The submission record, the copy `queued`', content: json(AdminSubmission) },
        401: formError('No or wrong token'),
        404: formError('Unknown submission or copy'),
        409: formError('Not failed, bounced or suppressed, or the address is no longer a recipient'),
      },
    },
  },
  '/admin/submissions.csv': {
    get: {
      summary:
        "A key's submissions as CSV: delivery, bounce, spam, autoresponse and copies to added recipients, custom fields as columns (streamed; formula-safe cells)",
      security: adminSecurity,
      parameters: [{ name: 'key', in: 'query', required: true, schema: { type: 'string' } }],
      responses: { 200: { description: 'text/csv attachment' }, 400: formError('No key given'), 401: formError('No or wrong token') },
    },
  },
  '/admin/visitors/export': {
    get: {
      summary: "A visitor's data (GDPR Art. 15): everything stored about the address, as one JSON document with the files in base64, streamed",
      security: adminSecurity,
      parameters: [{ name: 'email', in: 'query', required: true, schema: { type: 'string', format: 'email' } }],
      responses: {
        200: { description: 'application/json attachment (docs/operations.md, "A visitor\'s data on request")' },
        400: formError('No valid address'),
        401: formError('No or wrong token'),
        429: formError('As many downloads as may run at once are running'),
        503: formError('Redis cannot be reached'),
      },
    },
  },
  '/admin/visitors/erase': {
    post: {
      summary: "Erase a visitor's data (GDPR Art. 17), in batches; what must hold is kept as a hash of the address",
      security: adminSecurity,
      requestBody: { required: true, content: json(VisitorEraseSchema) },
      responses: {
        200: { description: 'application/x-ndjson: one line per step ({step, done, total}), then {done: true, summary} or {done: false, error}' },
        400: formError('No valid address'),
        401: formError('No or wrong token'),
        503: formError('Redis cannot be reached'),
      },
    },
  },
  '/admin/queues': {
    get: {
      summary: 'The queue dashboard (bull-board); HTTP Basic with the token as password for browsers',
      security: adminSecurity,
      responses: { 200: { description: 'HTML' }, 401: formError('No or wrong token') },
    },
  },
};
