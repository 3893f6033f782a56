// One small client for the tests: submissions to the contact API (JSON or multipart), the admin
// API with its bearer token, row counts, and the spec's expected error bodies. A `base` is the
// harness (or anything with its url); module-level helpers take a function returning it, because
// the harness is started in beforeAll.
import { postJson, type Harness } from './harness.ts';
import { jsonOrUndefined, request } from './http.ts';
import { multipartBody, postRaw, type Part, type PostOptions } from './multipart.ts';

export const CONTACT_API = '/api/contact-api/';

type Base = Pick<Harness, 'url'>;
type Lazy<T> = T | (() => T);
type Fields = Record<string, unknown>;
const resolve = <T>(value: Lazy<T>): T => (typeof value === 'function' ? (value as () => T)() : value);

/** POST /api/contact-api/ with a JSON body (Accept: application/json). */
export function submitJson(base: Base, fields: Fields | string, headers: Record<string, string> = {}) {
  return postJson(`${base.url}${CONTACT_API}`, fields, headers);
}

/** `submitJson` from a chosen loopback source address (another client IP); the raw node response. */
export function submitFrom(base: Base, localAddress: string, fields: Fields, headers: Record<string, string> = {}) {
  return request(`${base.url}${CONTACT_API}`, {
    method: 'POST',
    localAddress,
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(fields),
  });
}

/** `submitJson` with default fields (a key, a sender, a message) that each call may override or add to. */
export function submitter(base: Lazy<Base>, defaults: Lazy<Fields> = {}) {
  return (fields: Fields = {}, headers: Record<string, string> = {}) => submitJson(resolve(base), { ...resolve(defaults), ...fields }, headers);
}

/** POST /api/contact-api/ with a multipart body built from `parts` (closed unless told otherwise). */
export function submitMultipart(base: Base, parts: Part[], options: { closed?: boolean } & PostOptions = {}) {
  const { closed, ...post } = options;
  const { body, contentType } = multipartBody(parts, { closed });
  return postRaw(`${base.url}${CONTACT_API}`, body, { 'content-type': contentType }, post);
}

export type AdminResponse = { status: number; headers: Headers; json: any; text: string };

/** A call to the admin API with `token` as the bearer (null: no Authorization), `body` as JSON. */
export async function adminRequest(base: Base, token: string | null, method: string, path: string, body?: unknown): Promise<AdminResponse> {
  const response = await fetch(`${base.url}${path}`, {
    method,
    headers: {
      ...(token === null ? {} : { authorization: `Bearer ${token}` }),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, json: jsonOrUndefined(text), text };
}

/** The admin API as one operator: `admin(method, path, body?, token?)`, the token overridable per call. */
export function adminClient(base: Lazy<Base>, token: string) {
  return (method: string, path: string, body?: unknown, as: string | null = token) => adminRequest(resolve(base), as, method, path, body);
}

/** The rows of `table`, optionally filtered by a `where` clause with $1… `values`. */
export async function count(db: Pick<Harness, 'sql'>, table: string, where?: string, values: unknown[] = []): Promise<number> {
  const rows = await db.sql<{ n: number }>(`select count(*)::int as n from ${table}${where ? ` where ${where}` : ''}`, values);
  return rows[0]!.n;
}

/** The spec's form-style error bodies. */
export const expected = {
  /** `{success: false, message, errors: {__all__: [message], ...fieldErrors}}` */
  formError: (message: string, fieldErrors: Record<string, unknown> = {}) => ({
    success: false,
    message,
    errors: { __all__: [message], ...fieldErrors },
  }),
  invalidKey: {
    success: false,
    message: 'Invalid or inactive verification key.',
    errors: { access_key: ['Invalid or inactive verification key.'], __all__: ['Invalid or inactive verification key.'] },
  },
} as const;
