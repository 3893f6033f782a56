// Every spelling of an admin path is authenticated: case, percent-encoding, doubled slashes, dot
// segments and trailing slashes reach the token check before any route answers. Requests go out
// with the raw path as written (fetch would normalise some of these spellings away).
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonOrUndefined } from '../support/http.ts';
import { startHarness, type Harness, type TestKey } from '../support/harness.ts';
import { submitJson } from '../support/client.ts';

const TOKEN = 'admin-paths-token-0123456789';
let h: Harness;
let key: TestKey;
let submissionId: string;

beforeAll(async () => {
  h = await startHarness({ env: { ADMIN_TOKEN: TOKEN }, worker: false });
  key = await h.createKey({ email: 'owner@example.com' });
  submissionId = (await submitJson(h, { access_key: key.key, email: 'a@example.org', message: 'hi', not_email_sent: true })).json.submission_id;
});
afterAll(() => h?.stop());

function rawRequest(method: string, rawPath: string, headers: Record<string, string> = {}, body?: string) {
  const { hostname, port } = new URL(h.url);
  return new Promise<{ status: number; text: string; json: any }>((resolve, reject) => {
    const req = http.request({ host: hostname, port, method, path: rawPath, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode ?? 0, text, json: jsonOrUndefined(text) });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Spellings of one path that a lenient router, proxy or server might treat as that path. */
function spellings(path: string): string[] {
  const rest = path.slice('/admin'.length);
  return [
    path,
    `/ADMIN${rest}`,
    `/Admin${rest}`,
    `/ADMIN${rest.replace(/^\/[a-z.]+/, (segment) => segment.toUpperCase())}`,
    `/%61dmin${rest}`,
    `/%41DMIN${rest}`,
    `/admin%2F${rest.slice(1)}`,
    `//admin${rest}`,
    `/admin/${rest}`,
    `/./admin${rest}`,
    `/x/../admin${rest}`,
    `/%2e/admin${rest}`,
    path.includes('?') ? path.replace('?', '/?') : `${path}/`,
    `/admin;x${rest}`,
  ];
}

const routes = (): Array<{ method: string; path: string; body?: string }> => [
  { method: 'GET', path: '/admin/keys?email=owner@example.com' },
  { method: 'GET', path: '/admin/submissions' },
  { method: 'GET', path: `/admin/submissions/${submissionId}` },
  { method: 'GET', path: `/admin/submissions.csv?key=${key.key}` },
  { method: 'PATCH', path: `/admin/keys/${key.key}`, body: JSON.stringify({ status: 'disabled' }) },
  { method: 'GET', path: '/admin/queues' },
  { method: 'GET', path: '/admin/queues/api/queues' },
];

describe('admin paths in every spelling', () => {
  it('answer 401 without the token, whatever the case, encoding or slashes', async () => {
    const answered: string[] = [];
    for (const route of routes()) {
      for (const path of spellings(route.path)) {
        const headers: Record<string, string> = route.body ? { 'content-type': 'application/json' } : {};
        const response = await rawRequest(route.method, path, headers, route.body);
        if (response.status !== 401) answered.push(`${route.method} ${path} -> ${response.status}`);
      }
    }
    expect(answered).toEqual([]);
    // The PATCHes above changed nothing: the key still submits.
    const still = await submitJson(h, { access_key: key.key, email: 'a@example.org', message: 'still on', not_email_sent: true });
    expect(still.status).toBe(200);
  });

  it('leak nothing with a wrong token either', async () => {
    for (const path of spellings('/admin/keys?email=owner@example.com')) {
      const response = await rawRequest('GET', path, { authorization: 'Bearer wrong-token-0123456789' });
      expect(response.status, path).toBe(401);
      expect(response.text).not.toContain(key.key);
    }
  });

  it('match one spelling only once authenticated: the canonical path answers, others are 404', async () => {
    const auth = { authorization: `Bearer ${TOKEN}` };
    const canonical = await rawRequest('GET', '/admin/keys?email=owner@example.com', auth);
    expect(canonical.status).toBe(200);
    expect(canonical.json.keys).toHaveLength(1);
    for (const path of ['/ADMIN/keys?email=owner@example.com', '/Admin/Keys?email=owner@example.com', '/%61dmin/keys?email=owner@example.com']) {
      const response = await rawRequest('GET', path, auth);
      expect(response.status, path).toBe(404);
      expect(response.json).toEqual({ success: false, message: 'Not found.', errors: { __all__: ['Not found.'] } });
    }
  });

  it('keep the public routes case-sensitive too', async () => {
    const upper = await rawRequest(
      'POST',
      '/API/CONTACT-API/',
      { 'content-type': 'application/json' },
      JSON.stringify({ access_key: key.key, email: 'a@example.org', message: 'x' }),
    );
    expect(upper.status).toBe(404);
  });
});
