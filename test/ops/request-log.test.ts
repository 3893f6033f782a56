// The request line at LOG_LEVEL=debug: method, path, query and status, with credentials (keys,
// sign-in and confirm tokens) redacted.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createConsentSigner } from '../../src/shared/keys/consent.ts';
import { createLogger } from '../../src/shared/infra/log.ts';
import { startHarness, TEST_SECRET, type Harness } from '../support/harness.ts';
import { request } from '../support/http.ts';
import { adminClient } from '../support/client.ts';
import { askForLink } from '../support/owner.ts';

const TOKEN = 'request-log-admin-token-0123';
const lines: string[] = [];
let h: Harness;
beforeAll(async () => {
  const log = createLogger('api', 'debug', { write: (line: string) => void lines.push(line) });
  // With a worker: it sends the sign-in emails whose links are logged.
  h = await startHarness({ env: { ADMIN_TOKEN: TOKEN }, log });
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

  it('never contains the token of a sign-in link or of a confirm link, while both links still work', async () => {
    const { email } = await h.createKey();
    const signIn = await askForLink(h, email);
    const signInToken = signIn.searchParams.get('token')!;
    const signInPage = await request(signIn.toString());
    expect(signInPage.status).toBe(200);
    expect(signInPage.text).toContain(signInToken); // the page's button carries it on
    const confirm = new URL(createConsentSigner(TEST_SECRET).link(h.url, email));
    const confirmToken = confirm.searchParams.get('token')!;
    const confirmPage = await request(confirm.toString());
    expect(confirmPage.status).toBe(200);
    expect(confirmPage.text).toContain(confirmToken);

    const all = lines.join('\n');
    for (const secret of [signInToken, confirmToken]) expect(all).not.toContain(secret);
    expect(requestLines()).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ method: 'GET', path: '/owner/link', query: 'token=[redacted]', status: 200 }),
        expect.objectContaining({
          method: 'GET',
          path: '/confirm',
          query: `${new URLSearchParams({ address: email }).toString()}&token=[redacted]`,
          status: 200,
        }),
      ]),
    );
  });

  it('never contains a key sent under any spelling of a credential parameter', async () => {
    const { key } = await h.createKey();
    const before = requestLines().length;
    // What the API reads is exactly `key` (the filter below); a client that spelled it otherwise
    // still sent its key. After `;` the pair is, for the API, part of the value before it.
    const names = ['key[]', 'key%5B%5D', 'key[0]', 'key%5B0%5D', 'KEY', 'Key', 'k%65y', '+key', 'key.0', 'ACCESS_KEY', 'access_key[]', 'token[]', 'TOKEN'];
    const queries = [...names.map((name) => `limit=5&${name}=${key}`), `limit=5;key=${key}`, `status=sent;token=${key}&limit=5`];
    for (const query of queries) await asAdmin('GET', `/admin/submissions?${query}`);
    const filtered = await asAdmin('GET', `/admin/submissions?key=${key}`);
    expect(filtered.status).toBe(200);
    expect(filtered.json.submissions).toEqual([]);

    const logged = requestLines().slice(before);
    expect(logged).toHaveLength(queries.length + 1);
    expect(lines.join('\n')).not.toContain(key);
    expect(logged.map((entry) => entry.query)).toEqual(
      expect.arrayContaining([
        'limit=5&key[]=[redacted]',
        'limit=5&key%5B0%5D=[redacted]',
        'limit=5&KEY=[redacted]',
        'limit=5;key=[redacted]',
        'key=[redacted]',
      ]),
    );
  });

  it('never contains the key of /admin/keys/<key> however the path is spelled', async () => {
    const { key } = await h.createKey();
    const before = requestLines().length;
    const paths = [
      `/admin/./keys/${key}`,
      `/admin/%2e/keys/${key}`,
      `/ADMIN/keys/${key}`,
      `/%61dmin/keys/${key}`,
      `/%2561dmin/keys/${key}`,
      `//admin/keys/${key}`,
      `/admin/keys/./${key}`,
      `/admin/keys/${key}/..`,
      `/other/../admin/keys/${key}`,
      `/admin\\keys\\${key}`,
      `/admin%2Fkeys%2F${key}`,
    ];
    for (const path of paths) {
      await request(h.url, {
        method: 'PATCH',
        path,
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ status: 'active' }),
      });
    }
    expect(requestLines().slice(before)).toHaveLength(paths.length);
    expect(lines.join('\n')).not.toContain(key);
  });
});
