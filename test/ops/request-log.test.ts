// The request line at LOG_LEVEL=debug: method, path, query and status, with keys redacted.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redactPath, redactQuery } from '../../src/api/redact.ts';
import { createLogger } from '../../src/shared/log.ts';
import { startHarness, type Harness } from '../support/harness.ts';
import { request } from '../support/http.ts';
import { adminClient } from '../support/client.ts';

const TOKEN = 'request-log-admin-token-0123';
const lines: string[] = [];
let h: Harness;
beforeAll(async () => {
  const log = createLogger('api', 'debug', { write: (line: string) => void lines.push(line) });
  h = await startHarness({ env: { ADMIN_TOKEN: TOKEN }, worker: false, log });
});
afterAll(() => h?.stop());

const requestLines = () => lines.map((line) => JSON.parse(line)).filter((entry) => entry.msg === 'request');
const asAdmin = adminClient(() => h, TOKEN);

describe('the request log', () => {
  it('never contains a key, from a path or a query, in any spelling of the route', async () => {
    const { key } = await h.createKey();
    const encoded = key.replace(/[0-9a-f]/, (char) => `%${char.charCodeAt(0).toString(16)}`);
    expect((await asAdmin('PATCH', `/admin/keys/${key}`, { status: 'disabled' })).status).toBe(200);
    await asAdmin('PATCH', `/ADMIN/Keys/${key}`, { status: 'active' });
    await asAdmin('PATCH', `/admin/keys/${encoded}`, { status: 'active' });
    expect((await asAdmin('GET', `/admin/submissions.csv?key=${key}`)).status).toBe(200);
    await asAdmin('GET', `/admin/submissions?status=sent&KEY=${encoded}&limit=5`);
    await request(`${h.url}/api/contact-api/?access_key=${key}`, { method: 'OPTIONS' });

    const logged = requestLines();
    expect(logged.length).toBeGreaterThanOrEqual(6);
    const all = lines.join('\n');
    for (const secret of [key, encoded, key.slice(0, 18)]) expect(all).not.toContain(secret);
    expect(logged).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ method: 'PATCH', path: '/admin/keys/[redacted]', status: 200 }),
        expect.objectContaining({ method: 'GET', path: '/admin/submissions.csv', query: 'key=[redacted]', status: 200 }),
        expect.objectContaining({ path: '/admin/submissions', query: 'status=sent&KEY=[redacted]&limit=5' }),
        expect.objectContaining({ method: 'OPTIONS', query: 'access_key=[redacted]' }),
      ]),
    );
  });

  it('keeps paths and queries without keys as they are', () => {
    expect(redactPath('/admin/submissions/0b7e2c9a-1d2e-4f3a-9b8c-7d6e5f4a3b2c')).toBe('/admin/submissions/0b7e2c9a-1d2e-4f3a-9b8c-7d6e5f4a3b2c');
    expect(redactPath('/admin/keys')).toBe('/admin/keys');
    expect(redactPath('//admin//keys/abc/extra')).toBe('//admin//keys/[redacted]/extra');
    expect(redactQuery('email=a%40example.com&limit=5')).toBe('email=a%40example.com&limit=5');
    expect(redactQuery('k%65y=secret&x=1')).toBe('k%65y=[redacted]&x=1');
  });
});
