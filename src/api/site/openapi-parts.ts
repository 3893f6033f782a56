// Pieces the OpenAPI document's three parts share (src/api/site/openapi.ts, src/api/owners/openapi.ts,
// src/api/webhooks/webhooks-openapi.ts): one way to turn a valibot schema into JSON Schema, the error body,
// the common error responses, path parameters and security requirements.
import { toJsonSchema } from '@valibot/to-json-schema';
import * as v from 'valibot';
import { FILE_SCAN_OUTCOMES } from '../../shared/words/file-scan-outcomes.ts';
import { ATTEMPT_OUTCOMES } from '../../shared/submissions/entities.ts';
import { EMAIL_STATUSES } from '../../shared/deliveries/delivery-columns.ts';
import { BOUNCE_TYPES } from '../../shared/words/bounce-columns.ts';
import { SPAM_MARKS, SPAM_VERDICTS } from '../../shared/words/spam-kinds.ts';
import { AUTORESPONSE_OUTCOMES } from '../../shared/words/autoresponse-kinds.ts';
import { ATTEMPTS_SHOWN } from '../../shared/submissions/submissions.ts';

/** JSON Schema of what a request may send (`typeMode: 'input'`); checks JSON Schema cannot say are left out. */
export const jsonSchema = (schema: v.GenericSchema) => toJsonSchema(schema, { target: 'draft-2020-12', typeMode: 'input', errorMode: 'ignore' });

/** A JSON body of this schema, as a request body's or a response's `content`. */
export const json = (schema: v.GenericSchema) => ({ 'application/json': { schema: jsonSchema(schema) } });

/** The error body every JSON refusal carries. */
export const ErrorBody = v.object({ success: v.literal(false), message: v.string(), errors: v.record(v.string(), v.array(v.string())) });
export const error = (description: string) => ({ description, content: json(ErrorBody) });

export const unauthorized = error('Not signed in');
export const forbidden = error('Cross-site, or no or wrong CSRF token');
/** Another owner's record and one that does not exist get the same answer. */
export const notOwned = error('Not among your keys (the same for what does not exist)');

/** A uuid in the path, e.g. `{id}`, `{keyId}`. */
export const idParam = (name: string) => ({ name, in: 'path', required: true, schema: { type: 'string', format: 'uuid' } });
/** A verification key's value in the path: `{key}`. */
export const keyParam = { name: 'key', in: 'path', required: true, schema: { type: 'string' } };

export const adminSecurity = [{ adminToken: [] }];
export const ownerSecurity = [{ ownerSession: [] }];
/** Writes of the owner console: the session cookie and its CSRF token. */
export const ownerWriteSecurity = [{ ownerSession: [], ownerCsrf: [] }];

/** What came back for an email after the relay took it (src/shared/submissions/submissions.ts bounceRecord). */
export const BounceDetail = v.object({
  type: v.pipe(v.picklist(BOUNCE_TYPES), v.description('hard and complaint are final (status bounced, complained); soft and delayed are not')),
  status: v.pipe(v.nullable(v.string()), v.description('Enhanced status code, e.g. 5.1.1')),
  diagnostic: v.pipe(v.nullable(v.string()), v.description("The receiving server's words, as the report gives them")),
  reporting_mta: v.nullable(v.string()),
  at: v.pipe(v.string(), v.isoTimestamp()),
});
export const BounceReport = v.pipe(v.nullable(BounceDetail), v.description('The last report that came back to the return path for this email (null: none)'));

/** A file's virus scan (docs/file-scanning.md); null before the scan, or with scanning off. */
export const FileScan = v.pipe(
  v.object({
    outcome: v.picklist(FILE_SCAN_OUTCOMES),
    detail: v.pipe(v.nullable(v.string()), v.description("infected: clamd's signature name; unscanned, too_large_to_scan: why")),
  }),
  v.description(
    'clean; infected: withheld from every email, copy and webhook, deleted or quarantined, never downloadable (410); unscanned: the scanner was unavailable past SCAN_WAIT_MS, linked not attached; too_large_to_scan: linked not attached',
  ),
);

/** The spam filter's verdict and the owner's mark (src/shared/submissions/submissions.ts spamRecord). */
export const SpamDetail = v.object({
  verdict: v.pipe(
    v.nullable(v.picklist(SPAM_VERDICTS)),
    v.description('spam: held, not emailed (status spam); ham: emailed; unchecked: the filter was down or slow, and the email went out; null: not checked'),
  ),
  score: v.pipe(v.nullable(v.number()), v.description("rspamd's score; the key's level sets the score from which it is spam")),
  reasons: v.pipe(
    v.array(v.object({ symbol: v.string(), score: v.number(), description: v.optional(v.string()) })),
    v.description('The rules that raised the score most, strongest first'),
  ),
  checked_at: v.nullable(v.pipe(v.string(), v.isoTimestamp())),
  mark: v.pipe(v.nullable(v.picklist(SPAM_MARKS)), v.description("The owner's mark, taught to the filter")),
  marked_at: v.nullable(v.pipe(v.string(), v.isoTimestamp())),
});
export const SpamVerdictDetail = v.pipe(v.nullable(SpamDetail), v.description('The spam check of this submission (null: never checked nor marked)'));

/** One attempt to send a submission's email (src/shared/submissions/submissions.ts AttemptRecord). */
export const AttemptDetail = v.object({
  attempt: v.pipe(v.number(), v.description('Its number within its delivery: from 1 again after a re-send')),
  at: v.pipe(v.string(), v.isoTimestamp(), v.description('When its outcome was recorded')),
  outcome: v.pipe(
    v.picklist(ATTEMPT_OUTCOMES),
    v.description('sent: the SMTP server accepted it; retrying: refused for now, tried again; failed: refused for good, or retried past the horizon'),
  ),
  response: v.pipe(v.nullable(v.string()), v.description("The SMTP server's reply (250 … when accepted), or the error when none came")),
  worker: v.pipe(v.string(), v.description('The worker process that made it: host name and process id')),
});

/** An attempt as the owner's records show it: without the worker, host names of the operator's network replaced. */
export const OwnerAttemptDetail = v.object({
  ...v.omit(AttemptDetail, ['worker']).entries,
  response: v.pipe(
    v.nullable(v.string()),
    v.description("The SMTP server's reply (250 … when accepted), or the error when none came, its host names as (the mail relay)"),
  ),
});

/** The delivery fields of every submission record, operator's or owner's (src/shared/submissions/submissions.ts submissionFields). */
export const deliveryFields = {
  email_attempts: v.pipe(v.number(), v.description('Attempts of the current delivery, counted from its last re-send')),
  last_error: v.pipe(v.nullable(v.string()), v.description("The mail server's last refusal, as it replied (null once sent)")),
  last_attempt_at: v.pipe(v.nullable(v.pipe(v.string(), v.isoTimestamp())), v.description('When the email was last tried (null: not yet)')),
  next_attempt_at: v.pipe(
    v.nullable(v.pipe(v.string(), v.isoTimestamp())),
    v.description('While retrying: when its retry timer ends and it is tried again; a flush brings it forward (null otherwise)'),
  ),
  delivery_attempts: v.pipe(
    v.array(AttemptDetail),
    v.description(`The delivery history, newest first: every attempt, across re-sends; the latest ${ATTEMPTS_SHOWN} are listed`),
  ),
  delivery_attempts_total: v.pipe(v.number(), v.description('How many attempts the history keeps in all')),
};

// The public endpoints' error body: the shared one, described, and with the request id of a 500.
export const FormError = v.object({
  ...ErrorBody.entries,
  errors: v.pipe(ErrorBody.entries.errors, v.description('Field name (or __all__) → messages')),
  request_id: v.optional(v.pipe(v.string(), v.description('On 500 only: the id under which the log has the detail'))),
});
export const KeyLimitError = v.object({ error: v.string() });
export const formError = (description: string) => ({ description, content: json(FormError) });
export const CORS_PREFLIGHT = {
  summary: 'CORS preflight',
  responses: { 204: { description: 'Access-Control-Allow-Origin: *, Allow-Methods: POST, OPTIONS, Allow-Headers: Content-Type, X-Requested-With, Accept' } },
};
export const rateLimited = formError('Too many requests (1 per 3 seconds per client IP by default); Retry-After says when to retry');
/** PostgreSQL unreachable (stopped, restarting): nothing was saved; Retry-After says when to try again. */
export const unavailable = {
  ...formError('The service is unavailable for a moment (its database cannot be reached); nothing was saved'),
  headers: { 'Retry-After': { description: 'Seconds to wait (5)', schema: { type: 'integer' } } },
};

/** A copy of a submission's email to one of its key's added recipients (src/shared/recipients). */
export const RecipientCopy = v.object({
  copy_id: v.pipe(v.string(), v.uuid(), v.description('Its id: POST …/copies/{copy_id}/resend re-sends it')),
  email: v.pipe(v.string(), v.description('The added address it goes to')),
  email_status: v.pipe(
    v.picklist(EMAIL_STATUSES),
    v.description(
      'held: waiting until this address confirms (deleted after HELD_TTL_DAYS); queued, sending, retrying, sent, failed; bounced, complained: what came back to its own return path; suppressed: not attempted (the address bounced too often, complained, or was removed from the key)',
    ),
  ),
  email_attempts: v.number(),
  last_error: v.pipe(v.nullable(v.string()), v.description("The mail server's last refusal, or why it was not attempted")),
  sent_at: v.nullable(v.string()),
  bounce: BounceReport,
  removed: v.pipe(v.boolean(), v.description('The address was removed from the key since; the copy is not re-sent')),
  resendable: v.pipe(v.boolean(), v.description('failed, bounced or suppressed, and the address still one of the key’s recipients')),
});

/** A key's added recipient, as the owner and admin APIs show it. */
export const AddedRecipient = v.object({
  id: v.pipe(v.string(), v.uuid()),
  email: v.string(),
  confirmed: v.pipe(v.boolean(), v.description('It confirmed, through the link emailed to it, that it wants the copies; until then it receives nothing else')),
  confirmed_at: v.nullable(v.string()),
  added_at: v.string(),
});

/** A submission's record, as the owner and admin APIs show it. */
export const Submission = v.object({
  submission_id: v.pipe(v.string(), v.uuid()),
  key_id: v.pipe(v.string(), v.uuid()),
  created_at: v.string(),
  email_status: v.picklist(EMAIL_STATUSES),
  ...deliveryFields,
  last_error: v.pipe(
    v.nullable(v.string()),
    v.description("The mail server's last refusal, as it replied, or the error, its host names as (the mail relay); null once sent"),
  ),
  delivery_attempts: v.pipe(v.array(OwnerAttemptDetail), deliveryFields.delivery_attempts.pipe[1]),
  bounce: BounceReport,
  spam: SpamVerdictDetail,
  autoresponse: v.pipe(
    v.nullable(v.picklist(AUTORESPONSE_OUTCOMES)),
    v.description(
      "The confirmation email to the visitor: pending (queued), sent, failed, suppressed, or why none was sent (off, not_confirmed, spam, unchecked, filter_off, role_address, limit_key, limit_address); null until the owner's email is decided",
    ),
  ),
  copies: v.pipe(
    v.array(RecipientCopy),
    v.description(
      "One per added recipient of the key, each with its own status, report and re-send: made once the spam check let the message through (none for spam, for a message saved without an email, or while the message waits for the key's own address to confirm)",
    ),
  ),
  sent_at: v.nullable(v.string()),
  email: v.string(),
  subject: v.string(),
  message: v.pipe(v.string(), v.description('In a list, its first 1,000 characters; whole at /owner/api/submissions/{id}')),
  custom_fields: v.pipe(
    v.array(v.object({ name: v.string(), value: v.string() })),
    v.description("In the order the form sent them; in a list, each value's first 500 characters"),
  ),
  truncated: v.pipe(v.boolean(), v.description('Whether this list cut the message or a field; always false for one submission')),
  test: v.pipe(v.boolean(), v.description('A test message the owner sent from the console: counted in no bound or figure')),
  attachments: v.array(
    v.object({
      id: v.string(),
      filename: v.string(),
      size: v.number(),
      content_type: v.string(),
      download: v.pipe(v.nullable(v.string()), v.description('The download route; null for a withheld (infected) file')),
      scan: v.nullable(FileScan),
    }),
  ),
});
