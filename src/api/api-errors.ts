// Errors are values with a stable id and an HTTP status; `renderError` maps them to the
// spec's two body shapes in one place.

import { EmailCapError, MAX_ACTIVE_KEYS, type KeyRuleError } from '../shared/keys/keys.ts';

export type FieldErrors = Record<string, string[]>;

export type FormErrorBody = { success: false; message: string; errors: FieldErrors; request_id?: string };
export type KeyLimitBody = { error: string };

export class ApiError extends Error {
  override name = 'ApiError';
  readonly status: number;
  readonly id: string;
  readonly errors: FieldErrors;
  readonly headers: Record<string, string>;
  /** The key-limit error uses a body of its own: `{ error }`. */
  readonly shape: 'form' | 'key-limit';

  constructor(
    status: number,
    id: string,
    message: string,
    errors: FieldErrors = {},
    options: { headers?: Record<string, string>; shape?: 'form' | 'key-limit' } = {},
  ) {
    super(message);
    this.status = status;
    this.id = id;
    this.errors = errors;
    this.headers = options.headers ?? {};
    this.shape = options.shape ?? 'form';
  }
}

/** Field entries one error body lists at most, so a body with many bad fields gets a small answer. */
export const MAX_ERROR_ENTRIES = 20;

function capEntries(fieldErrors: FieldErrors): FieldErrors {
  const names = Object.keys(fieldErrors).filter((name) => name !== '__all__');
  if (names.length <= MAX_ERROR_ENTRIES) return fieldErrors;
  // Null prototype: a field named __proto__ stays an entry.
  const kept = Object.create(null) as FieldErrors;
  kept.__all__ = [...(fieldErrors.__all__ ?? []), `And ${names.length - MAX_ERROR_ENTRIES} more fields with errors.`];
  for (const name of names.slice(0, MAX_ERROR_ENTRIES)) kept[name] = fieldErrors[name]!;
  return { ...kept };
}

const REQUIRED = 'This field is required.';
/** A PostgreSQL restart (crash recovery included) usually takes a few seconds. */
const UNAVAILABLE_RETRY_AFTER_SECONDS = 5;
const MISSING = 'Missing required fields.';

export const errors = {
  missingFields: (fields: string[]) =>
    new ApiError(400, 'missing_fields', MISSING, {
      __all__: [MISSING],
      ...Object.fromEntries(fields.map((field) => [field, [REQUIRED]])),
    }),
  invalidFields: (fieldErrors: FieldErrors, message = 'Invalid fields.') =>
    new ApiError(400, 'invalid_fields', message, capEntries({ __all__: [message], ...fieldErrors })),
  invalidKey: () =>
    new ApiError(403, 'invalid_key', 'Invalid or inactive verification key.', {
      access_key: ['Invalid or inactive verification key.'],
      __all__: ['Invalid or inactive verification key.'],
    }),
  domainMismatch: () =>
    new ApiError(400, 'domain_mismatch', 'Verification key domain mismatch.', {
      access_key: ['Verification key domain mismatch.'],
      __all__: ['Domain does not match.'],
    }),
  keyLimit: () => new ApiError(400, 'key_limit', `You have reached the maximum of ${MAX_ACTIVE_KEYS} active keys.`, {}, { shape: 'key-limit' }),
  rateLimited: (retryAfterSeconds: number) => {
    const message = `Too many requests. Please wait ${retryAfterSeconds} seconds before trying again.`;
    return new ApiError(
      429,
      'rate_limited',
      message,
      { __all__: [message] },
      {
        headers: { 'Retry-After': String(retryAfterSeconds) },
      },
    );
  },
  emailCap: (message: string, retryAfterSeconds: number, field = 'email') =>
    new ApiError(
      429,
      'email_cap',
      message,
      { [field]: [message], __all__: [message] },
      {
        headers: { 'Retry-After': String(retryAfterSeconds) },
      },
    ),
  unsupportedMediaType: (allowed: string[]) => {
    const message = `Unsupported content type. Use ${allowed.join(', ')}.`;
    return new ApiError(415, 'unsupported_media_type', message, { __all__: [message] });
  },
  malformedBody: (detail: string) => {
    const message = `Malformed request body: ${detail}`;
    return new ApiError(400, 'malformed_body', message, { __all__: [message] });
  },
  payloadTooLarge: (detail: string) => new ApiError(413, 'payload_too_large', detail, { __all__: [detail] }),
  tooManyFields: (limit: number) => {
    const message = `Too many fields: at most ${limit} per request.`;
    return new ApiError(400, 'too_many_fields', message, { __all__: [message] });
  },
  tooManyFiles: (limit: number) => {
    const message = `Too many files: at most ${limit} files per submission.`;
    return new ApiError(400, 'too_many_files', message, { __all__: [message] });
  },
  storageQuota: (quotaMb: number) => {
    const message = `This key's storage quota (${quotaMb} MB of files) is full.`;
    return new ApiError(413, 'storage_quota', message, { __all__: [message] });
  },
  unconfirmedFiles: (retryAfterSeconds: number) => {
    const message =
      'Too many submissions with files for an address that has not confirmed it wants them. ' + 'Its owner can confirm through the link in the key email.';
    return new ApiError(
      429,
      'unconfirmed_files',
      message,
      { __all__: [message] },
      {
        headers: { 'Retry-After': String(retryAfterSeconds) },
      },
    );
  },
  storageFailed: () =>
    new ApiError(500, 'storage_failed', 'The files could not be stored. Please try again.', {
      __all__: ['The files could not be stored. Please try again.'],
    }),
  unauthorized: () =>
    new ApiError(
      401,
      'unauthorized',
      'Authentication required.',
      { __all__: ['Authentication required.'] },
      {
        // Basic lets a browser prompt for the token on the queue dashboard; API clients use Bearer.
        headers: { 'WWW-Authenticate': 'Bearer, Basic realm="Contact form admin"' },
      },
    ),
  notFound: (what = 'Not found.') => new ApiError(404, 'not_found', what, { __all__: [what] }),
  gone: (what: string) => new ApiError(410, 'gone', what, { __all__: [what] }),
  unavailable: (detail: string) => new ApiError(503, 'unavailable', detail, { __all__: [detail] }),
  /** A captcha answer that cannot be checked now (its provider, or the ALTCHA replay store, not answering). */
  captchaUnavailable: () => errors.unavailable('Captcha verification is unavailable. Please try again.'),
  serviceUnavailable: () => {
    const message = `The service is unavailable for a moment. Please try again in ${UNAVAILABLE_RETRY_AFTER_SECONDS} seconds.`;
    return new ApiError(
      503,
      'unavailable',
      message,
      { __all__: [message] },
      {
        headers: { 'Retry-After': String(UNAVAILABLE_RETRY_AFTER_SECONDS) },
      },
    );
  },
  internal: () => new ApiError(500, 'internal', 'Internal server error.', { __all__: ['Internal server error.'] }),
};

/** Maps a broken key rule to its HTTP error: the limit has a body of its own. */
export function fromKeyRule(error: KeyRuleError): ApiError {
  if (error.code === 'limit') return errors.keyLimit();
  if (error instanceof EmailCapError) return errors.emailCap(error.message, error.retryAfterSeconds, error.field);
  if (error.code === 'not_found') return errors.notFound(error.message);
  return errors.invalidFields({ [error.field]: [error.message] });
}

export function renderError(error: ApiError, requestId?: string): FormErrorBody | KeyLimitBody {
  if (error.shape === 'key-limit') return { error: error.message };
  return {
    success: false,
    message: error.message,
    errors: error.errors,
    ...(requestId && error.status >= 500 ? { request_id: requestId } : {}),
  };
}
