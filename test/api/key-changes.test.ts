// A key changed through any route of the API is honoured by that API's very next submission: the
// process forgets its cached keys itself (src/api/keys/key-changes.ts). Here PostgreSQL's change
// notification is silenced and the cache lifetime is 10 minutes, so nothing else could make the
// process notice.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postJson, startHarness, type Harness } from '../support/harness.ts';
import { queuedEndpointsOf } from '../support/queued-webhooks.ts';
import { request } from '../support/http.ts';
import { buildOwnerSession } from '../support/factories.ts';
import { csrfIn, ownerClient, type OwnerClient } from '../support/owner.ts';

const TOKEN = 'test-admin-token-0123456789';
let h: Harness;

beforeAll(async () => {
  h = await startHarness({ env: { ADMIN_TOKEN: TOKEN, KEY_CACHE_TTL_MS: '600000', WEBHOOK_ALLOW: '127.0.0.2' }, worker: false });
  // The trigger still fires; its notification no longer goes out.
  await h.sql(`create or replace function "cfs_notify_key_changes"() returns trigger language plpgsql as $$ begin return null; end $$`);
});
afterAll(async () => {
  await h?.stop();
});

const submit = (key: string) => postJson(`${h.url}/api/contact-api/`, { access_key: key, email: 'sender@example.org', message: 'hello' });
const admin = (method: string, path: string, body?: unknown) =>
  request(`${h.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
/** A signed-in owner of `email`'s keys, with the CSRF token of its pages. */
async function ownerOf(email: string): Promise<OwnerClient> {
  const { token } = await buildOwnerSession(h, { email });
  const owner = ownerClient(h, token);
  owner.csrf = csrfIn((await owner.get('/owner/keys')).text);
  return owner;
}

type Key = { id: string; key: string; email: string };
/** A key this process has cached: a submission with it was accepted. */
async function cachedKey(): Promise<Key> {
  const key = await h.createKey({ email: `owner-${Math.random().toString(36).slice(2)}@example.test` });
  expect((await submit(key.key)).status).toBe(200);
  return key;
}
/** The webhook deliveries the API queued for the submission (no worker runs here to write them). */
const webhooksQueuedFor = (submissionId: string) => queuedEndpointsOf(h, h.api.deps.webhookQueue, submissionId);

describe('a key change through a route reaches the next submission at once', () => {
  const disablers: Array<[string, (key: Key, owner: () => Promise<OwnerClient>) => Promise<number>]> = [
    ['the admin API', async (key) => (await admin('PATCH', `/admin/keys/${key.key}`, { status: 'disabled' })).status],
    ['the owner API', async (key, owner) => (await (await owner()).api('PATCH', `/keys/${key.id}`, { status: 'disabled' })).status],
    ['the console page', async (key, owner) => (await (await owner()).post(`/owner/keys/${key.id}`, { action: 'disable' })).status],
  ];
  it.each(disablers)('a key disabled through %s is refused', async (_route, disable) => {
    const key = await cachedKey();
    const status = await disable(key, () => ownerOf(key.email));
    expect([200, 303]).toContain(status);
    expect((await submit(key.key)).status).toBe(403);
  });

  const webhookAdders: Array<[string, (key: Key, owner: () => Promise<OwnerClient>) => Promise<number>]> = [
    ['the admin API', async (key) => (await admin('POST', `/admin/keys/${key.key}/webhooks`, { url: 'http://127.0.0.2:9/' })).status],
    ['the owner API', async (key, owner) => (await (await owner()).api('POST', `/keys/${key.id}/webhooks`, { url: 'http://127.0.0.2:9/' })).status],
    ['the console page', async (key, owner) => (await (await owner()).post(`/owner/keys/${key.id}/webhooks`, { url: 'http://127.0.0.2:9/' })).status],
  ];
  it.each(webhookAdders)('a webhook added through %s gets the next submission', async (_route, add) => {
    const key = await cachedKey();
    expect([200, 201]).toContain(await add(key, () => ownerOf(key.email)));
    const answer = await submit(key.key);
    expect(answer.status).toBe(200);
    expect(await webhooksQueuedFor(answer.json.submission_id)).toHaveLength(1);
  });
});
