// Plain HTML form posts get 303 redirects; every response of the public endpoints carries CORS.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../support/harness.ts';
import { submissionExists } from '../support/rows.ts';
import { form, request } from '../support/http.ts';

let h: Harness;
let openKey: string;
let restrictedKey: string;
beforeAll(async () => {
  h = await startHarness({ worker: false });
  openKey = (await h.createKey()).key;
  restrictedKey = (await h.createKey({ useDomain: true, domains: ['example.com'] })).key;
});
afterAll(() => h?.stop());

const BROWSER = { 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html,application/xhtml+xml,*/*;q=0.8' };

function browserPost(fields: Array<[string, string]>, headers: Record<string, string> = {}) {
  return request(`${h.url}/api/contact-api/`, { method: 'POST', headers: { ...BROWSER, ...headers }, body: form(fields) });
}
const valid = (key = openKey): Array<[string, string]> => [
  ['access_key', key],
  ['email', 'visitor@example.org'],
  ['message', 'Hello'],
];

describe('redirects for plain HTML forms', () => {
  it('sends a browser to the default success page with the submission id', async () => {
    const response = await browserPost(valid());
    expect(response.status).toBe(303);
    const location = new URL(response.headers.location!, h.url);
    expect(location.pathname).toBe('/contact/success/');
    const id = location.searchParams.get('submission_id');
    expect(await submissionExists(h, id!)).toBe(true);
  });

  it.each([
    ['an absolute https URL', 'https://site.test/thanks?a=1', (l: string) => l.startsWith('https://site.test/thanks?a=1&submission_id=')],
    ['a path', '/thanks/', (l: string) => l.startsWith('/thanks/?submission_id=')],
    ['javascript:', 'javascript:alert(1)', (l: string) => l.startsWith('/contact/success/?')],
    ['data:', 'data:text/html,hi', (l: string) => l.startsWith('/contact/success/?')],
    ['a protocol-relative URL', '//evil.test/x', (l: string) => l.startsWith('/contact/success/?')],
    ['a backslash trick', '/\\evil.test', (l: string) => l.startsWith('/contact/success/?')],
    // Paths that normalise to `//evil.test`, a protocol-relative URL to another host.
    ['a dot segment', '/.//evil.test', (l: string) => l.startsWith('/contact/success/?')],
    ['a parent segment', '/a/..//evil.test', (l: string) => l.startsWith('/contact/success/?')],
    ['an encoded dot segment', '/%2e//evil.test', (l: string) => l.startsWith('/contact/success/?')],
    ['an encoded parent segment', '/a/%2E%2e//evil.test/x', (l: string) => l.startsWith('/contact/success/?')],
    ['a dot segment before a backslash', '/./\\evil.test', (l: string) => l.startsWith('/contact/success/?')],
    ['a path with dot segments on this host', '/a/../thanks/', (l: string) => l.startsWith('/thanks/?submission_id=')],
  ])('success_url as %s', async (_, target, check) => {
    const response = await browserPost([...valid(), ['success_url', target]]);
    expect(response.status).toBe(303);
    expect(check(response.headers.location!)).toBe(true);
  });

  it('keeps a restricted key on its domains', async () => {
    const elsewhere = await browserPost([...valid(restrictedKey), ['success_url', 'https://evil.test/']], { origin: 'https://example.com' });
    expect(elsewhere.headers.location).toMatch(/^\/contact\/success\/\?/);
    const allowed = await browserPost([...valid(restrictedKey), ['success_url', 'https://www.example.com/ok']], { origin: 'https://example.com' });
    expect(allowed.headers.location).toMatch(/^https:\/\/www\.example\.com\/ok\?submission_id=/);
  });

  it('sends errors to the error page with the message', async () => {
    const response = await browserPost([['email', 'visitor@example.org']]);
    expect(response.status).toBe(303);
    const location = new URL(response.headers.location!, h.url);
    expect(location.pathname).toBe('/contact/error/');
    expect(location.searchParams.get('error')).toBe('Missing required fields.');

    const custom = await browserPost([
      ['access_key', openKey],
      ['error_url', '/oops/'],
      ['email', 'visitor@example.org'],
    ]);
    expect(custom.headers.location).toMatch(/^\/oops\/\?error=/);
  });

  it('follows error_url only when a valid key vouches for it', async () => {
    const noKey = await browserPost([
      ['error_url', 'https://evil.test/'],
      ['email', 'visitor@example.org'],
    ]);
    const unknownKey = await browserPost([...valid('00000000-0000-4000-8000-000000000000'), ['error_url', 'https://evil.test/']]);
    const wrongDomain = await browserPost([...valid(restrictedKey), ['error_url', 'https://evil.test/']], { origin: 'https://evil.test' });
    const unknownKeyPath = await browserPost([...valid('00000000-0000-4000-8000-000000000000'), ['error_url', '/oops/']]);
    for (const response of [noKey, unknownKey, wrongDomain, unknownKeyPath]) {
      expect(response.status).toBe(303);
      expect(response.headers.location).toMatch(/^\/contact\/error\/\?error=/);
    }
    // A valid key vouches even when the error comes before the key is checked (a missing field).
    const vouched = await browserPost(
      [
        ['access_key', restrictedKey],
        ['error_url', 'https://example.com/oops'],
        ['email', 'visitor@example.org'],
      ],
      {
        origin: 'https://example.com',
      },
    );
    expect(vouched.headers.location).toMatch(/^https:\/\/example\.com\/oops\?error=/);
    const normalised = await browserPost([...valid(openKey), ['message', ''], ['error_url', '/.//evil.test']]);
    expect(normalised.headers.location).toMatch(/^\/contact\/error\/\?error=/);
  });

  it('answers JSON to scripts (X-Requested-With) and to clients preferring JSON', async () => {
    const xhr = await browserPost(valid(), { 'x-requested-with': 'XMLHttpRequest' });
    expect(xhr.status).toBe(200);
    expect(xhr.json.success).toBe(true);
    const api = await browserPost(valid(), { accept: 'application/json' });
    expect(api.status).toBe(200);
  });

  it('serves the success and error pages as escaped HTML with security headers', async () => {
    const success = await request(`${h.url}/contact/success/?submission_id=abc`);
    expect(success.status).toBe(200);
    expect(success.headers['content-type']).toMatch(/^text\/html/);
    expect(success.headers['content-security-policy']).toContain("default-src 'none'");
    expect(success.headers['x-content-type-options']).toBe('nosniff');
    expect(success.text).toContain('<html lang="en">');
    const error = await request(`${h.url}/contact/error/?error=${encodeURIComponent('<script>alert(1)</script>')}`);
    expect(error.text).not.toContain('<script>');
    // Shown as text: escaped, whichever entity form the escaper picks.
    expect(error.text).toMatch(/(&lt;|&#60;)script(&gt;|&#62;)alert\(1\)/);
  });
});

describe('CORS', () => {
  it.each(['/api/contact-api/', '/'])('OPTIONS %s answers 204 with the three headers', async (path) => {
    const variants: Array<Record<string, string>> = [{}, { origin: 'https://site.test', 'access-control-request-method': 'POST' }];
    for (const headers of variants) {
      const response = await request(`${h.url}${path}`, { method: 'OPTIONS', headers });
      expect(response.status).toBe(204);
      expect(response.headers['access-control-allow-origin']).toBe('*');
      expect(response.headers['access-control-allow-methods']).toBe('POST, OPTIONS');
      expect(response.headers['access-control-allow-headers']).toBe('Content-Type, X-Requested-With, Accept');
    }
  });

  it('puts Access-Control-Allow-Origin on successes and errors alike', async () => {
    const headers = { origin: 'https://site.test', 'content-type': 'application/json' };
    const ok = await request(`${h.url}/api/contact-api/`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ access_key: openKey, email: 'a@example.org', message: 'hi' }),
    });
    const missing = await request(`${h.url}/api/contact-api/`, { method: 'POST', headers, body: '{}' });
    const badType = await request(`${h.url}/api/contact-api/`, {
      method: 'POST',
      headers: { origin: 'https://site.test', 'content-type': 'text/plain' },
      body: 'x',
    });
    const keyError = await request(`${h.url}/`, { method: 'POST', headers, body: '{"email": 1}' });
    for (const [response, status] of [
      [ok, 200],
      [missing, 400],
      [badType, 415],
      [keyError, 400],
    ] as const) {
      expect(response.status).toBe(status);
      expect(response.headers['access-control-allow-origin']).toBe('*');
    }
  });
});
