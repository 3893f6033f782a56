// The submissions' part of the OpenAPI document (src/api/site/openapi.ts composes it): POST /api/contact-api/
// and the ALTCHA challenge a form with that captcha fetches first.
import * as v from 'valibot';
import { EMAIL_STATUSES } from '../../shared/deliveries/delivery-columns.ts';
import { CORS_PREFLIGHT, formError, json, jsonSchema, rateLimited, unavailable } from '../site/openapi-parts.ts';
import { ALTCHA_TTL_SECONDS } from './altcha.ts';
import { SubmissionFieldsSchema } from './input.ts';

const SubmissionResponse = v.object({
  success: v.literal(true),
  message: v.string(),
  submission_id: v.pipe(v.string(), v.uuid()),
  attachments: v.number(),
  email_status: v.picklist(EMAIL_STATUSES),
});

const submissionBody = { ...jsonSchema(SubmissionFieldsSchema), additionalProperties: { description: 'Any other field is stored as a custom field' } };

const submitForm = {
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
};

export const submissionPaths = {
  '/api/contact-api/': submitForm,
  '/f/{access_key}': {
    post: {
      ...submitForm.post,
      summary: 'Submit a contact form, the key in the path (as Formspree and Basin forms post)',
      parameters: [
        { name: 'access_key', in: 'path', required: true, schema: { type: 'string' }, description: 'Verification key, in place of the access_key field' },
      ],
    },
    options: CORS_PREFLIGHT,
  },
  '/api/contact-api/altcha-challenge': {
    get: {
      summary: 'A new ALTCHA challenge, for a key whose captcha is altcha',
      description: `What the \`<altcha-widget>\` fetches (its script: /assets/altcha.min.js). Solve it (altcha-lib 2, PBKDF2/SHA-256) and send base64 of \`{"challenge": …, "solution": {"counter", "derivedKey"}}\` as the submission's \`altcha\` field, with the same key, within ${ALTCHA_TTL_SECONDS / 60} minutes; each answer is accepted once.`,
      parameters: [{ name: 'access_key', in: 'query', required: true, schema: { type: 'string' } }],
      responses: {
        200: {
          description: 'The challenge (never cached)',
          content: {
            'application/json': {
              schema: {
                type: 'object',
                required: ['parameters', 'signature'],
                properties: {
                  parameters: { type: 'object', description: 'algorithm, cost, nonce, salt, keyPrefix, expiresAt, data, …' },
                  signature: { type: 'string' },
                },
              },
            },
          },
        },
        403: formError('Unknown, disabled or deleted key'),
        429: rateLimited,
        503: unavailable,
      },
    },
    options: { summary: 'CORS preflight', responses: { 204: { description: 'Access-Control-Allow-Origin: *, Allow-Methods: GET, OPTIONS' } } },
  },
};
