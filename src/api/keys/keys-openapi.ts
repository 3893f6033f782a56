// The keys' part of the OpenAPI document (src/api/site/openapi.ts composes it): the start page and
// POST / (a new key, or all keys emailed), and /confirm (a mailbox's consent).
import * as v from 'valibot';
import { CORS_PREFLIGHT, FormError, formError, json, jsonSchema, KeyLimitError, rateLimited, unavailable } from '../site/openapi-parts.ts';
import { KeyRequestSchema } from './key-routes.ts';

const GenerateKeyResponse = v.object({ success: v.literal(true), message: v.string(), key: v.string(), keys_count: v.number() });
const GetKeysResponse = v.object({ success: v.literal(true), message: v.string(), keys_count: v.number() });

export const keyPaths = {
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
};

export const consentPaths = {
  '/confirm': {
    get: {
      summary: 'Recipient consent: the page behind the link in key emails (changes nothing; its button posts)',
      description:
        "With recipient and token instead of address: the page behind the link an address added to a key gets (in its request to confirm, and in every copy): who added it, a button to confirm that key's copies and one to be removed from the key.",
      parameters: [
        ...['address', 'recipient'].map((name) => ({ name, in: 'query', schema: { type: 'string' } })),
        { name: 'token', in: 'query', required: true, schema: { type: 'string' } },
      ],
      responses: { 200: { description: 'HTML page with a confirm button' }, 400: { description: 'HTML: the link is not valid' } },
    },
    post: {
      summary: 'Recipient consent: confirm the mailbox (lasting) and release its held submissions',
      description:
        "With recipient, token and action=confirm: an added address confirms it wants that key's copies, and its held copies go out; action=remove takes it off the key.",
      requestBody: {
        required: true,
        content: {
          'application/x-www-form-urlencoded': {
            schema: {
              type: 'object',
              required: ['token'],
              properties: {
                address: { type: 'string' },
                recipient: { type: 'string' },
                token: { type: 'string' },
                action: { type: 'string', enum: ['confirm', 'remove'] },
              },
            },
          },
        },
      },
      responses: { 200: { description: 'HTML: confirmed' }, 400: { description: 'HTML: the link is not valid' }, 429: rateLimited },
    },
  },
};
