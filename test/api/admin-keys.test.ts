// The operator API for keys: bearer-token auth, listing and the state transitions.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../support/harness.ts';
import { adminClient } from '../support/client.ts';

const TOKEN = 'test-admin-token-0123456789';
let h: Harness;
beforeAll(async () => {
  h = await startHarness({ env: { ADMIN_TOKEN: TOKEN }, worker: false });
});
afterAll(() => h?.stop());

const admin = adminClient(() => h, TOKEN);

describe('admin authentication', () => {
  it('refuses a missing or wrong token with 401', async () => {
    expect((await admin('GET', '/admin/keys?email=a@example.com', undefined, null)).status).toBe(401);
    expect((await admin('GET', '/admin/keys?email=a@example.com', undefined, 'wrong-token-0123456789')).status).toBe(401);
    expect((await admin('GET', '/admin/keys?email=a@example.com', undefined, `${TOKEN}x`)).status).toBe(401);
    expect((await admin('GET', '/admin/keys?email=a@example.com')).status).toBe(200);
  });

  it('does not exist (404) when ADMIN_TOKEN is unset', async () => {
    const other = await startHarness({ worker: false });
    try {
      const response = await fetch(`${other.url}/admin/keys?email=a@example.com`, { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(response.status).toBe(404);
    } finally {
      await other.stop();
    }
  });
});

describe('PATCH /admin/keys/:key', () => {
  it('moves a key between states and answers with the key record', async () => {
    const key = await h.createKey({ email: 'ops@example.test' });
    const disabled = await admin('PATCH', `/admin/keys/${key.key}`, { status: 'disabled' });
    expect(disabled.status).toBe(200);
    expect(disabled.json).toEqual({
      key: key.key,
      label: null,
      subject_prefix: false,
      autoresponse: { enabled: false, subject: null, text: null, review: null },
      email_subject: null,
      email_field_order: [],
      email_hidden_fields: [],
      email_files: 'attach',
      status: 'disabled',
      email: 'ops@example.test',
      use_domain: false,
      domains: [],
      captcha: null,
      spam_filter: 'normal',
      spam_to_webhooks: false,
      recipients: [],
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    expect((await admin('PATCH', `/admin/keys/${key.key}`, { status: 'active' })).json.status).toBe('active');
    expect((await admin('PATCH', `/admin/keys/${key.key}`, { status: 'deleted' })).json.status).toBe('deleted');

    const revived = await admin('PATCH', `/admin/keys/${key.key}`, { status: 'active' });
    expect(revived.status).toBe(400);
    expect(revived.json.errors.status).toEqual(['A deleted key cannot become active.']);
    expect((await admin('PATCH', `/admin/keys/${key.key}`, { domains: ['example.com'] })).status).toBe(400);
  });

  it('sets and clears the domain restriction', async () => {
    const key = await h.createKey();
    const restricted = await admin('PATCH', `/admin/keys/${key.key}`, { domains: ['Example.com', 'example.org'] });
    expect(restricted.json).toMatchObject({ use_domain: true, domains: ['example.com', 'example.org'] });
    const open = await admin('PATCH', `/admin/keys/${key.key}`, { use_domain: false });
    expect(open.json).toMatchObject({ use_domain: false, domains: ['example.com', 'example.org'] });
    const noDomains = await admin('PATCH', `/admin/keys/${key.key}`, { use_domain: true, domains: [] });
    expect(noDomains.status).toBe(400);
  });

  it.each([
    ['an unknown status', { status: 'paused' }, 'status'],
    ['a non-boolean use_domain', { use_domain: 'yes' }, 'use_domain'],
    ['a bad domain', { domains: ['http://example.com'] }, 'domains'],
    ['an unknown field', { email: 'x@example.com' }, 'email'],
  ])('refuses %s with 400', async (_, body, field) => {
    const key = await h.createKey();
    const response = await admin('PATCH', `/admin/keys/${key.key}`, body);
    expect(response.status).toBe(400);
    expect(response.json.success).toBe(false);
    expect(Object.keys(response.json.errors)).toContain(field);
  });

  it('answers 404 for an unknown key', async () => {
    const response = await admin('PATCH', '/admin/keys/00000000-0000-4000-8000-000000000000', { status: 'disabled' });
    expect(response.status).toBe(404);
  });
});

describe('GET /admin/keys', () => {
  it("lists the address's keys with their states", async () => {
    const a = await h.createKey({ email: 'list@example.test' });
    const b = await h.createKey({ email: 'list@example.test', status: 'disabled' });
    await h.createKey({ email: 'someone-else@example.test' });
    const response = await admin('GET', '/admin/keys?email=LIST@example.test');
    expect(response.status).toBe(200);
    expect(response.json.email).toBe('list@example.test');
    expect(response.json.keys.map((k: any) => [k.key, k.status])).toEqual([
      [a.key, 'active'],
      [b.key, 'disabled'],
    ]);
  });

  it('requires a valid email', async () => {
    expect((await admin('GET', '/admin/keys')).status).toBe(400);
    expect((await admin('GET', '/admin/keys?email=nope')).status).toBe(400);
  });
});
