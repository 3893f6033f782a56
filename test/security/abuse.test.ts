// Abuse and keys at rest: a dump yields no key, POST / cannot mail-bomb an inbox (in any spelling)
// nor spend its owner's sign-in links, the honeypot discards bots silently, captcha per key is
// verified server-side, headers are set.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, listObjectKeys, postJson, startHarness, type Harness } from '../support/harness.ts';
import { request } from '../support/http.ts';
import { adminClient, count as countIn, submitter } from '../support/client.ts';
import { askForLink, postForm, signInMailsTo } from '../support/owner.ts';
import { mailSettled } from '../support/rows.ts';

const TOKEN = 'abuse-test-admin-token-0123';
let verifyCalls: Array<Record<string, string>> = [];
let verifier: Server;
let h: Harness;

beforeAll(async () => {
  // A local stand-in for the hCaptcha / Turnstile verify endpoint.
  verifier = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      const params = Object.fromEntries(new URLSearchParams(body));
      verifyCalls.push({ path: req.url ?? '', ...params });
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ success: params.response === 'good-token' && params.secret?.startsWith('server-secret') }));
    });
  });
  await new Promise<void>((resolve) => verifier.listen(0, '127.0.0.1', resolve));
  const verifyBase = `http://127.0.0.1:${(verifier.address() as AddressInfo).port}`;
  h = await startHarness({
    env: {
      ADMIN_TOKEN: TOKEN,
      KEY_EMAILS_PER_HOUR: '5',
      SIGN_IN_EMAILS_PER_HOUR: '2',
      HCAPTCHA_SECRET: 'server-secret-h',
      HCAPTCHA_VERIFY_URL: `${verifyBase}/hcaptcha`,
      TURNSTILE_SECRET: 'server-secret-t',
      TURNSTILE_VERIFY_URL: `${verifyBase}/turnstile`,
    },
  });
});
afterAll(async () => {
  await h?.stop();
  await new Promise((resolve) => verifier?.close(resolve));
});

const count = (table: string) => countIn(h, table);
const submit = submitter(() => h, { email: 'a@example.org', message: 'hi' });
const admin = adminClient(() => h, TOKEN);

describe('keys at rest', () => {
  it('keeps no usable key in the database', async () => {
    const response = await postJson(`${h.url}/`, { email: 'dump@example.test' });
    const key = response.json.key as string;
    const rows = await h.sql('select * from verification_keys where email = $1', ['dump@example.test']);
    expect(rows).toHaveLength(1);
    const dump = JSON.stringify(rows);
    expect(dump).not.toContain(key);
    expect(dump).not.toContain(key.replace(/-/g, ''));
    // Yet the key works, and getKeys can still email it.
    expect((await submit({ access_key: key })).status).toBe(200);
    await postJson(`${h.url}/`, { email: 'dump@example.test', requestType: 'getKeys' });
    const list = await eventually(async () =>
      h.sink.messages.find((mail) => mail.envelope.to.includes('dump@example.test') && mail.parsed.subject === 'Your contact form verification keys'),
    );
    expect(list.parsed.text).toContain(key);
  });
});

describe('mail bombing through POST /', () => {
  it('sends at most KEY_EMAILS_PER_HOUR emails to one mailbox, then answers 429 and sends nothing', async () => {
    const victim = 'victim@example.test';
    for (let i = 0; i < 3; i++) expect((await postJson(`${h.url}/`, { email: victim })).status).toBe(200);
    for (let i = 0; i < 2; i++) expect((await postJson(`${h.url}/`, { email: victim, requestType: 'getKeys' })).status).toBe(200);
    const keysBefore = await h.sql('select count(*)::int as n from verification_keys where email = $1', [victim]);
    const refused = await postJson(`${h.url}/`, { email: victim });
    expect(refused.status).toBe(429);
    expect(refused.json).toMatchObject({ success: false, errors: { email: [expect.stringContaining('Too many emails')] } });
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(3000);
    expect((await postJson(`${h.url}/`, { email: victim.toUpperCase(), requestType: 'getKeys' })).status).toBe(429);
    // The cap counts the mailbox: +tags and case make no new allowance.
    expect((await postJson(`${h.url}/`, { email: 'victim+1@example.test' })).status).toBe(429);
    expect((await postJson(`${h.url}/`, { email: 'Victim+2@Example.test' })).status).toBe(429);
    expect(await h.sql('select count(*)::int as n from verification_keys where email = $1', [victim])).toEqual(keysBefore);
    expect(await h.sql('select count(*)::int as n from key_emails where email = $1', [victim])).toEqual([{ n: 5 }]);
  });

  it('counts every spelling of one Gmail inbox as one mailbox (dots, googlemail.com), and mails each as typed', async () => {
    const spellings = ['e.rin@gmail.com', 'er.in@gmail.com', 'erin@googlemail.com', 'E.R.I.N@Gmail.com', 'erin+forms@gmail.com'];
    for (const email of spellings) expect((await postJson(`${h.url}/`, { email })).status).toBe(200);
    for (const email of ['erin@gmail.com', 'e.r.i.n+x@googlemail.com', 'ERIN@GOOGLEMAIL.COM']) {
      const refused = await postJson(`${h.url}/`, { email });
      expect(refused.status).toBe(429);
      expect(refused.json).toMatchObject({ success: false, errors: { email: [expect.stringContaining('Too many emails')] } });
    }
    const rows = await h.sql<{ email: string; mailbox: string }>(
      "select k.email, k.mailbox from key_emails k where k.mailbox = 'erin@gmail.com' order by k.created_at",
    );
    expect(rows.map((row) => row.email)).toEqual(spellings.map((email) => email.toLowerCase()));
    const mailed = await eventually(async () => {
      const to = h.sink.messages.flatMap((mail) => mail.envelope.to).filter((address) => /@(gmail|googlemail)\.com$/.test(address));
      return to.length === spellings.length ? to : undefined;
    });
    expect(mailed.sort()).toEqual(spellings.map((email) => email.toLowerCase()).sort());
    // Other providers keep their dots: another mailbox, another allowance.
    expect((await postJson(`${h.url}/`, { email: 'e.rin@example.test' })).status).toBe(200);
  });

  it("keeps the console's sign-in links apart from the key emails strangers can spend, within their own allowance", async () => {
    const owner = await h.createKey({ email: 'locked-out@example.test' });
    for (let i = 0; i < 5; i++) expect((await postJson(`${h.url}/`, { email: `Locked-Out+${i}@example.test` })).status).toBe(200);
    expect((await postJson(`${h.url}/`, { email: owner.email })).status).toBe(429);

    // The owner still gets a sign-in link, and can sign in with it.
    const url = await askForLink(h, owner.email);
    const token = url.searchParams.get('token')!;
    const used = await postForm(h, '/owner/link', { token });
    expect(used.status).toBe(303);
    // SIGN_IN_EMAILS_PER_HOUR (2 here) bounds the links: asking again answers the same, and sends nothing past it.
    await askForLink(h, owner.email);
    const before = signInMailsTo(h, owner.email).length;
    expect((await postForm(h, '/owner/sign-in', { email: owner.email })).status).toBe(200);
    await mailSettled(h);
    expect(signInMailsTo(h, owner.email)).toHaveLength(before);
    expect(await h.sql("select count(*)::int as n from key_emails where mailbox = $1 and kind = 'sign-in'", [owner.email])).toEqual([{ n: 2 }]);
  });
});

describe('honeypot', () => {
  it('answers a filled botcheck as if accepted, and keeps and sends nothing', async () => {
    const key = await h.createKey();
    const [rows, objects] = [await count('submissions'), (await listObjectKeys(h.storage)).length];
    const body = new FormData();
    body.set('access_key', key.key);
    body.set('email', 'bot@example.org');
    body.set('message', 'buy now');
    body.set('botcheck', 'on');
    body.append('file', new Blob([Buffer.alloc(2048, 1)]), 'spam.bin');
    const response = await fetch(`${h.url}/api/contact-api/`, { method: 'POST', body, headers: { accept: 'application/json' } });
    const json = (await response.json()) as any;
    expect(response.status).toBe(200);
    expect(json).toEqual({ success: true, message: 'Message sent successfully.', submission_id: expect.any(String), attachments: 1, email_status: 'queued' });
    // The answer comes after the clean-up; a row kept by mistake would bring an email, which has settled by then.
    await mailSettled(h);
    expect(await count('submissions')).toBe(rows);
    expect((await listObjectKeys(h.storage)).length).toBe(objects);
    expect(await h.sql(`select id from submissions where email = 'bot@example.org'`)).toEqual([]);
    expect(h.sink.messages.some((mail) => mail.parsed.text?.includes('buy now'))).toBe(false);
    const metrics = await (await fetch(`${h.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).text();
    expect(metrics).toMatch(/cfs_submissions_rejected_total\{reason="honeypot"\} [1-9]/);
  });

  it('ignores an empty botcheck and does not store it as a custom field', async () => {
    const key = await h.createKey();
    const response = await submit({ access_key: key.key, botcheck: '' });
    expect(response.status).toBe(200);
    const [row] = await h.sql('select custom_fields from submissions where id = $1', [response.json.submission_id]);
    expect(row!.custom_fields).toEqual([]);
  });
});

describe('captcha per key', () => {
  it.each([
    ['hcaptcha', 'h-captcha-response', '/hcaptcha', 'server-secret-h'],
    ['turnstile', 'cf-turnstile-response', '/turnstile', 'server-secret-t'],
  ] as const)('%s: refuses a missing or wrong answer and accepts a verified one', async (provider, field, path, secret) => {
    const key = await h.createKey();
    expect((await admin('PATCH', `/admin/keys/${key.key}`, { captcha: provider })).status).toBe(200);

    const missing = await submit({ access_key: key.key });
    expect(missing.status).toBe(400);
    expect(missing.json.errors[field]).toEqual(['Complete the captcha.']);

    verifyCalls = [];
    const wrong = await submit({ access_key: key.key, [field]: 'bad-token' });
    expect(wrong.status).toBe(400);
    expect(wrong.json.errors[field]).toEqual(['Captcha verification failed.']);

    const right = await submit({ access_key: key.key, [field]: 'good-token' });
    expect(right.status).toBe(200);
    expect(verifyCalls.map((call) => [call.path, call.secret, call.response])).toEqual([
      [path, secret, 'bad-token'],
      [path, secret, 'good-token'],
    ]);
    const [row] = await h.sql('select custom_fields from submissions where id = $1', [right.json.submission_id]);
    expect(row!.custom_fields).toEqual([]);
  });

  it.each([
    ['hcaptcha', 'h-captcha-response'],
    ['turnstile', 'cf-turnstile-response'],
  ] as const)('%s: refuses an answer longer than 8,192 characters without asking the provider', async (provider, field) => {
    const key = await h.createKey();
    expect((await admin('PATCH', `/admin/keys/${key.key}`, { captcha: provider })).status).toBe(200);
    verifyCalls = [];
    const stored = await count('submissions');
    const longest = await submit({ access_key: key.key, [field]: 'x'.repeat(8_192) });
    expect(longest.status).toBe(400);
    expect(verifyCalls).toHaveLength(1);
    const tooLong = await submit({ access_key: key.key, [field]: 'x'.repeat(8_193) });
    expect(tooLong.status).toBe(400);
    expect(tooLong.json.errors[field]).toEqual(['Captcha verification failed.']);
    expect(verifyCalls).toHaveLength(1);
    expect(await count('submissions')).toBe(stored);
  });

  it('does not ask a key without captcha', async () => {
    const key = await h.createKey();
    expect((await submit({ access_key: key.key })).status).toBe(200);
  });
});

describe('headers', () => {
  it('sends nosniff everywhere and no X-Powered-By', async () => {
    for (const path of ['/healthz', '/contact/success/', '/no-such-page']) {
      const response = await request(`${h.url}${path}`);
      expect(response.headers['x-content-type-options']).toBe('nosniff');
      expect(response.headers['x-powered-by']).toBeUndefined();
    }
    const page = await request(`${h.url}/contact/error/`);
    expect(page.headers['content-security-policy']).toBeDefined();
    expect(page.headers['referrer-policy']).toBe('no-referrer');
  });
});
