// POST / — key generation and listing, the per-address limit, and every 400 case.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { updateKey } from '../support/factories.ts';
import { eventually, postJson, startHarness, type Harness } from '../support/harness.ts';
import { mailSettled } from '../support/rows.ts';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ env: { PUBLIC_URL: 'https://forms.example.test' } });
});
afterAll(() => h?.stop());

let sequence = 0;
const freshAddress = () => `person${++sequence}-${Date.now()}@example.test`;
const generate = (email: string, extra: Record<string, unknown> = {}) => postJson(`${h.url}/`, { email, ...extra });
const mailsTo = (address: string) => h.sink.messages.filter((mail) => mail.envelope.to.includes(address));

async function waitForMailsTo(address: string, count: number) {
  return eventually(async () => (mailsTo(address).length >= count ? mailsTo(address) : undefined), 20_000, `${count} emails to ${address}`);
}

describe('generateKey', () => {
  it('creates a key, answers with it and emails it with instructions', async () => {
    const email = freshAddress();
    const response = await generate(email);
    expect(response.status).toBe(200);
    expect(response.json).toEqual({
      success: true,
      message: `New key generated and sent to ${email}.`,
      key: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/),
      keys_count: 1,
    });
    const key = response.json.key as string;

    const [mail] = await waitForMailsTo(email, 1);
    expect(mail!.parsed.subject).toBe('Your contact form verification key');
    expect(mail!.parsed.text).toContain(key);
    expect(mail!.parsed.text).toContain('access_key');
    expect(mail!.parsed.text).toContain('"requestType": "getKeys"');
    expect(mail!.parsed.html).toContain(key);
    // The example form is shown as code: escaped, whichever entity form the escaper picks.
    expect(mail!.parsed.html).toMatch(/(&lt;|&#60;)form action=(&#34;|&quot;)https:\/\/forms\.example\.test\/api\/contact-api\/(&#34;|&quot;)/);
  });

  it('counts the active keys of an address, whatever its case', async () => {
    const email = freshAddress();
    expect((await generate(email)).json.keys_count).toBe(1);
    expect((await generate(email.toUpperCase())).json.keys_count).toBe(2);
    const third = await generate(`  ${email}  `);
    expect(third.json.keys_count).toBe(3);
    expect(third.json.message).toBe(`New key generated and sent to ${email}.`);
    const rows = await h.sql('select distinct email from verification_keys where lower(email) = $1', [email]);
    expect(rows).toEqual([{ email }]);
  });

  it('restricts the key to the given domains', async () => {
    const response = await generate(freshAddress(), { domains: ['Example.com', 'shop.example.org'] });
    expect(response.status).toBe(200);
    const [row] = await h.sql('select use_domain, domains from verification_keys where key_hash = $1', [h.hashKey(response.json.key)]);
    expect(row).toEqual({ use_domain: true, domains: ['example.com', 'shop.example.org'] });
  });

  it('refuses the 11th key; deleted keys do not count, disabled keys do', async () => {
    const email = freshAddress();
    const keys: string[] = [];
    for (let i = 1; i <= 10; i++) {
      const response = await generate(email);
      expect(response.json.keys_count).toBe(i);
      keys.push(response.json.key);
    }
    const refused = await generate(email);
    expect(refused.status).toBe(400);
    expect(refused.json).toEqual({ error: 'You have reached the maximum of 10 active keys.' });

    await updateKey(h, { key: keys[0]! }, { status: 'disabled' });
    expect((await generate(email)).status).toBe(400);

    await updateKey(h, { key: keys[1]! }, { status: 'deleted' });
    const afterDelete = await generate(email);
    expect(afterDelete.status).toBe(200);
    expect(afterDelete.json.keys_count).toBe(9); // 10 held: 9 active + 1 disabled
    expect((await generate(email)).status).toBe(400);
  });

  it('holds the limit under concurrency: 20 parallel requests leave exactly 10 keys', async () => {
    const email = freshAddress();
    const responses = await Promise.all(Array.from({ length: 20 }, () => generate(email)));
    expect(responses.filter((r) => r.status === 200)).toHaveLength(10);
    expect(responses.filter((r) => r.status === 400)).toHaveLength(10);
    const [{ n }] = (await h.sql(`select count(*)::int as n from verification_keys where email = $1 and status = 'active'`, [email])) as [{ n: number }];
    expect(n).toBe(10);
    expect(
      responses
        .map((r) => r.json.keys_count)
        .filter(Boolean)
        .sort((a, b) => a - b),
    ).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  });
});

describe('getKeys', () => {
  it('emails every active key in one message and answers without a key', async () => {
    const email = freshAddress();
    const created = [];
    for (let i = 0; i < 3; i++) created.push((await generate(email)).json.key as string);
    await updateKey(h, { key: created[2]! }, { status: 'disabled' });
    await waitForMailsTo(email, 3);

    const response = await postJson(`${h.url}/`, { email, requestType: 'getKeys' });
    expect(response.status).toBe(200);
    expect(response.json).toEqual({ success: true, message: `All keys have been emailed to ${email}.`, keys_count: 2 });
    expect(response.text).not.toContain(created[0]);

    const mails = await waitForMailsTo(email, 4);
    const list = mails[3]!;
    expect(list.parsed.subject).toBe('Your contact form verification keys');
    expect(list.parsed.text).toContain(created[0]);
    expect(list.parsed.text).toContain(created[1]);
    expect(list.parsed.text).not.toContain(created[2]);
    expect(list.parsed.html).toContain(created[0]);
  });

  it('answers keys_count 0 and sends nothing to an address without active keys', async () => {
    const email = freshAddress();
    const response = await postJson(`${h.url}/`, { email, requestType: 'getKeys' });
    expect(response.status).toBe(200);
    expect(response.json.success).toBe(true);
    expect(response.json.keys_count).toBe(0);
    // Every email the service took on is sent (or failed): one for this address would be in the sink now.
    await mailSettled(h);
    expect(mailsTo(email)).toHaveLength(0);
    expect(await h.sql('select * from key_emails where email = $1', [email])).toEqual([]);
  });
});

describe('bad requests to POST /', () => {
  const formError = (field: string) => ({
    success: false,
    message: expect.any(String),
    errors: expect.objectContaining({ [field]: [expect.any(String)] }),
  });

  it('answers a missing email with the spec body', async () => {
    const response = await postJson(`${h.url}/`, { requestType: 'generateKey' });
    expect(response.status).toBe(400);
    expect(response.json).toEqual({
      success: false,
      message: 'Missing required fields.',
      errors: { __all__: ['Missing required fields.'], email: ['This field is required.'] },
    });
  });

  it.each([
    ['a number', { email: 42 }, 'email'],
    ['an object', { email: { $ne: '' } }, 'email'],
    ['an invalid address', { email: 'not-an-address' }, 'email'],
    ['an address of 255 characters', { email: `${'a'.repeat(243)}@example.com` }, 'email'],
    ['an unknown requestType', { email: 'a@example.com', requestType: 'deleteKeys' }, 'requestType'],
    ['a domain with a scheme', { email: 'a@example.com', domains: ['https://example.com'] }, 'domains'],
    ['a domain with a port', { email: 'a@example.com', domains: ['example.com:8080'] }, 'domains'],
    ['a domain with a path', { email: 'a@example.com', domains: ['example.com/contact'] }, 'domains'],
    ['21 domains', { email: 'a@example.com', domains: Array.from({ length: 21 }, (_, i) => `d${i}.example.com`) }, 'domains'],
    ['domains that are not a list', { email: 'a@example.com', domains: 'example.com' }, 'domains'],
  ])('refuses %s', async (_, body, field) => {
    const before = await h.sql('select count(*)::int as n from verification_keys');
    const response = await postJson(`${h.url}/`, body);
    expect(response.status).toBe(400);
    expect(response.json).toEqual(formError(field));
    expect(await h.sql('select count(*)::int as n from verification_keys')).toEqual(before);
  });

  it.each([
    ['malformed JSON', '{"email": "a@example.com"', 'application/json'],
    ['a JSON array', '["a@example.com"]', 'application/json'],
    ['a JSON string', '"a@example.com"', 'application/json'],
    ['plain text', 'email=a@example.com', 'text/plain'],
    ['a form post', 'email=a@example.com', 'application/x-www-form-urlencoded'],
  ])('refuses %s with a form-style 400', async (_, body, contentType) => {
    const response = await postJson(`${h.url}/`, body, { 'content-type': contentType });
    expect(response.status).toBe(400);
    expect(response.json).toEqual({ success: false, message: expect.any(String), errors: { __all__: [expect.any(String)] } });
  });
});
