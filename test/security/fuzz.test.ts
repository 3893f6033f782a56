// Property-based fuzzing of both public endpoints with random and adversarial bodies. For every
// request: a status below 500, the process still answers, no row saved for a 4xx, memory bounded.
// FUZZ_RUNS sets the number of runs per property (`npm run fuzz` runs many more).
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../support/harness.ts';
import { count } from '../support/client.ts';
import { request } from '../support/http.ts';

const RUNS = Number(process.env.FUZZ_RUNS ?? 60);
const TIMEOUT_MS = Math.max(60_000, RUNS * 1_000);
let h: Harness;
let validKey: string;
/** Stands for the valid key in generated bodies; swapped in when a request is sent. */
const VALID_KEY = '__VALID_KEY__';
let rssAtStart: number;

beforeAll(async () => {
  h = await startHarness({ worker: false });
  validKey = (await h.createKey()).key;
  rssAtStart = process.memoryUsage().rss;
});
afterAll(() => h?.stop());

const countRows = () => count(h, 'submissions');

/** Sends one request and checks the invariants that hold whatever the body was. */
async function sendAndCheck(path: string, contentType: string | undefined, body: Buffer, extraHeaders: Record<string, string> = {}) {
  const before = await countRows();
  const sent = Buffer.from(body.toString('latin1').replaceAll(VALID_KEY, validKey), 'latin1');
  const response = await request(`${h.url}${path}`, {
    method: 'POST',
    headers: { ...(contentType === undefined ? {} : { 'content-type': contentType }), accept: 'application/json', ...extraHeaders },
    body: sent,
  }).catch((error: unknown) => {
    // The server may close a connection whose body it stopped reading; it must still be alive.
    const { code } = error as NodeJS.ErrnoException;
    if (code === 'ECONNRESET' || code === 'EPIPE') return undefined;
    throw error;
  });
  if (response) {
    expect(response.status, response.text.slice(0, 300)).toBeLessThan(500);
    if (response.status >= 400) expect(await countRows()).toBe(before);
    if (response.headers['content-type']?.includes('json')) expect(response.json).toBeTypeOf('object');
  }
  const health = await request(`${h.url}/healthz`);
  expect(health.status).toBe(200);
}

// ------------------------------------------------------------------ arbitraries

const fieldName = fc.oneof(
  fc.constantFrom('access_key', 'email', 'message', 'subject', 'not_email_sent', 'success_url', 'error_url', 'botcheck'),
  fc.constantFrom('__proto__', 'constructor', 'toString', 'prototype', 'hasOwnProperty', '', ' ', '0', 'a[b]', 'a.b'),
  fc.string({ maxLength: 30 }),
  fc.string({ unit: 'binary', maxLength: 20 }),
);
const scalar = fc.oneof(
  fc.string({ maxLength: 50 }),
  fc.string({ unit: 'binary', maxLength: 50 }),
  fc.constantFrom(VALID_KEY, 'visitor@example.org', 'a@b', 'x\r\nBcc: y@z', 'javascript:alert(1)', '//evil.test'),
  fc.integer(),
  fc.double(),
  fc.constantFrom(1e308, -1e308, 2 ** 53 + 1, Number.MAX_SAFE_INTEGER),
  fc.boolean(),
  fc.constant(null),
);
const deep = (depth: number): string => '['.repeat(depth) + ']'.repeat(depth);

const jsonBody = fc.oneof(
  // Objects with adversarial names and nested values.
  fc.dictionary(fieldName, fc.oneof(scalar, fc.jsonValue({ maxDepth: 4 })), { maxKeys: 20 }).map((o) => Buffer.from(JSON.stringify(o))),
  // Plausible submissions with one thing wrong.
  fc.record({ access_key: fc.oneof(fc.constant(VALID_KEY), scalar), email: scalar, message: scalar }).map((o) => Buffer.from(JSON.stringify(o))),
  // Any JSON value, deep nesting, huge numbers, duplicate keys.
  fc.jsonValue({ maxDepth: 6 }).map((v) => Buffer.from(JSON.stringify(v) ?? 'null')),
  fc.integer({ min: 1, max: 5_000 }).map((n) => Buffer.from(`{"a":${deep(n)}}`)),
  fc.constant(Buffer.from(`{"email":"a@example.org","email":"b@example.org","message":"m","access_key":"k"}`)),
  fc.constant(Buffer.from('{"n": 1e999999, "m": -1e-999999}')),
  // Text PostgreSQL cannot store (NUL, unpaired surrogates), in named and custom fields and names.
  fc
    .tuple(fc.constantFrom('message', 'subject', 'email', 'custom', '\\udfff', 'a\\u0000b'), fc.constantFrom('\\u0000', '\\udfff', '\\ud800x', 'a\\u0000b'))
    .map(([name, value]) => Buffer.from(`{"access_key":"${VALID_KEY}","email":"v@example.org","message":"m","${name}":"${value}"}`)),
  fc.integer({ min: 1, max: 400_000 }).map((n) => Buffer.from(`{"email":"a@example.org","domains":${deep(n)}}`)),
  // Broken JSON and raw bytes, invalid UTF-8 included.
  fc.string({ maxLength: 200 }).map((s) => Buffer.from(s)),
  fc.uint8Array({ maxLength: 300 }).map((bytes) => Buffer.from(bytes)),
);

const urlencodedBody = fc.oneof(
  fc.array(fc.tuple(fieldName, fc.string({ maxLength: 40 })), { maxLength: 30 }).map((pairs) => Buffer.from(new URLSearchParams(pairs).toString())),
  fc.string({ maxLength: 300 }).map((s) => Buffer.from(s)),
  fc.constantFrom('%', '%%', '%zz=%', 'a=%E0%A4%A', '&&&===', 'a[b][c]=1&a[__proto__][x]=1').map((s) => Buffer.from(s)),
  // 10,000 fields.
  fc.constant(Buffer.from(Array.from({ length: 10_000 }, (_, i) => `f${i}=v`).join('&'))),
  fc.uint8Array({ maxLength: 300 }).map((bytes) => Buffer.from(bytes)),
);

const BOUNDARY = 'fuzzBoundary7MA4YWxkTrZu0gW';
const part = fc.oneof(
  fc
    .tuple(fieldName, fc.string({ maxLength: 60 }))
    .map(([name, value]) => `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`),
  fc
    .tuple(fieldName, fc.string({ maxLength: 40 }), fc.string({ maxLength: 200 }))
    .map(
      ([name, filename, content]) =>
        `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"; filename="${filename}"\r\nContent-Type: application/octet-stream\r\n\r\n${content}\r\n`,
    ),
  fc.constantFrom(
    `--${BOUNDARY}\r\n\r\n\r\n`, // a part without headers
    `--${BOUNDARY}\r\nContent-Disposition: form-data\r\n\r\nno name\r\n`,
    `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename=""\r\nContent-Type: application/octet-stream\r\n\r\n\r\n`,
    `--${BOUNDARY}\r\nContent-Disposition: form-data; name="x"; filename="../../etc/passwd"\r\n\r\nroot\r\n`,
    `--${BOUNDARY}\r\nContent-Disposition: form-data; name="x"\r\nContent-Type: ${'a'.repeat(5000)}\r\n\r\nv\r\n`,
    `--${BOUNDARY.slice(0, 10)}\r\n`, // a boundary cut short
    `--${BOUNDARY}--junk`,
  ),
);
const multipartBody = fc
  .tuple(
    fc.array(part, { maxLength: 15 }),
    fc.constantFrom(`--${BOUNDARY}--\r\n`, '', `--${BOUNDARY}`, '\r\n'), // closed, unterminated, or broken
    fc.boolean(),
  )
  .map(([parts, end, withKey]) => {
    const key = withKey
      ? `--${BOUNDARY}\r\nContent-Disposition: form-data; name="access_key"\r\n\r\n${VALID_KEY}\r\n--${BOUNDARY}\r\nContent-Disposition: form-data; name="email"\r\n\r\nv@example.org\r\n--${BOUNDARY}\r\nContent-Disposition: form-data; name="message"\r\n\r\nm\r\n`
      : '';
    return Buffer.from(key + parts.join('') + end);
  });
const multipartType = fc.constantFrom(
  `multipart/form-data; boundary=${BOUNDARY}`,
  `multipart/form-data; boundary="${BOUNDARY}"`,
  'multipart/form-data',
  'multipart/form-data; boundary=',
  `multipart/form-data; boundary=${'b'.repeat(100)}`,
);
const oddContentType = fc.oneof(
  fc.constant(undefined),
  fc.string({ maxLength: 100 }).filter((s) => !/[\r\n\u0000-\u001f\u007f-\uffff]/.test(s)),
  fc.constantFrom('application/json; charset=utf-16', 'application/json; charset=latin1', 'application/x-www-form-urlencoded; charset=nope', 'text/html'),
);
const oddHeaders = fc.dictionary(
  fc.constantFrom('x-forwarded-for', 'origin', 'referer', 'x-requested-with', 'accept', 'x-request-id'),
  fc.oneof(fc.string({ maxLength: 40 }), fc.constantFrom('null', 'http://[::1', 'a'.repeat(8000))).map((s) => s.replace(/[^\x20-\x7e]/g, '')),
);

// ------------------------------------------------------------------ properties

describe.each(['/api/contact-api/', '/'])('fuzzing POST %s', (path) => {
  it('JSON bodies', { timeout: TIMEOUT_MS }, async () => {
    await fc.assert(
      fc.asyncProperty(jsonBody, oddHeaders, (body, headers) => sendAndCheck(path, 'application/json', body, headers)),
      { numRuns: RUNS },
    );
  });

  it('urlencoded bodies', { timeout: TIMEOUT_MS }, async () => {
    await fc.assert(
      fc.asyncProperty(urlencodedBody, (body) => sendAndCheck(path, 'application/x-www-form-urlencoded', body)),
      { numRuns: RUNS },
    );
  });

  it('multipart bodies', { timeout: TIMEOUT_MS }, async () => {
    await fc.assert(
      fc.asyncProperty(multipartBody, multipartType, (body, type) => sendAndCheck(path, type, body)),
      { numRuns: RUNS },
    );
  });

  it('odd content types', { timeout: TIMEOUT_MS }, async () => {
    await fc.assert(
      fc.asyncProperty(oddContentType, jsonBody, (type, body) => sendAndCheck(path, type, body)),
      { numRuns: RUNS },
    );
  });
});

// Bodies that once answered 500: each is now a clear 400 in the spec's error shape, nothing saved.
const UNSTORABLE = 'Must not contain NUL characters or unpaired surrogates.';
const once500: Array<[name: string, path: string, contentType: string, body: () => string, errors: Record<string, string[]>]> = [
  [
    'a NUL byte in message (JSON)',
    '/api/contact-api/',
    'application/json',
    () => `{"access_key":"${validKey}","email":"v@example.org","message":"a\\u0000b"}`,
    { __all__: ['Invalid fields.'], message: [UNSTORABLE] },
  ],
  [
    'a NUL byte in message (urlencoded)',
    '/api/contact-api/',
    'application/x-www-form-urlencoded',
    () => `access_key=${validKey}&email=v%40example.org&message=a%00b`,
    { __all__: ['Invalid fields.'], message: [UNSTORABLE] },
  ],
  [
    'a lone surrogate in a custom field',
    '/api/contact-api/',
    'application/json',
    () => `{"access_key":"${validKey}","email":"v@example.org","message":"m","company":"\\udfff"}`,
    { __all__: ['Invalid fields.'], company: [UNSTORABLE] },
  ],
  [
    'a lone surrogate in a custom field name',
    '/api/contact-api/',
    'application/json',
    () => `{"access_key":"${validKey}","email":"v@example.org","message":"m","\\udfff":"x"}`,
    { __all__: ['Invalid fields.'], '\ufffd': [UNSTORABLE] },
  ],
  [
    'domains nested 400,000 arrays deep',
    '/',
    'application/json',
    () => `{"email":"owner@example.org","domains":${deep(400_000)}}`,
    { __all__: ['Malformed request body: nested deeper than 10 levels.'] },
  ],
];

describe('bodies that once answered 500', () => {
  it.each(once500)('%s: 400', async (_name, path, contentType, body, errors) => {
    const before = await countRows();
    const response = await request(`${h.url}${path}`, { method: 'POST', headers: { 'content-type': contentType, accept: 'application/json' }, body: body() });
    expect(response.status, response.text.slice(0, 300)).toBe(400);
    expect(response.json).toEqual({ success: false, message: errors.__all__![0], errors });
    expect(await countRows()).toBe(before);
  });
});

describe('after the fuzzing', () => {
  it('kept memory bounded', () => {
    const grownMb = (process.memoryUsage().rss - rssAtStart) / 1024 / 1024;
    expect(grownMb).toBeLessThan(300);
  });
});
