// The reserved fields of Formspree, Basin, Web3Forms and FormSubmit read under this service's own
// rules, the key in the path (POST /f/<key>) authenticated in every spelling, and a refused
// browser form told which field was wrong. The forms themselves, in a browser: test/e2e/form-services.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildWebhookEndpoint } from '../support/factories.ts';
import { eventually, startHarness, type Harness } from '../support/harness.ts';
import { count } from '../support/client.ts';
import { form, request } from '../support/http.ts';
import { mailSettled, submissionRow } from '../support/rows.ts';
import type { ReceivedMail } from '../support/smtp-sink.ts';
import { startReceiver, type Receiver } from '../support/webhook-receiver.ts';

let h: Harness;
let receiver: Receiver;
let accessKey: string;
let restrictedKey: string;
beforeAll(async () => {
  h = await startHarness({ env: { WEBHOOK_ALLOW: '127.0.0.2' } });
  receiver = await startReceiver('127.0.0.2');
  const key = await h.createKey({ email: 'owner@example.test' });
  accessKey = key.key;
  await buildWebhookEndpoint(h, { key: key.id, url: receiver.url });
  restrictedKey = (await h.createKey({ useDomain: true, domains: ['example.com'] })).key;
}, 90_000);
afterAll(async () => {
  await h?.stop();
  await receiver?.close();
});

const BROWSER = { 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html,application/xhtml+xml,*/*;q=0.8' };
const SCRIPT = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' };
type Fields = Array<[string, string]>;

/** A form post to `path` (the request target as sent, not normalised): as a browser does, or as a script wanting JSON. */
const post = (path: string, fields: Fields, headers: Record<string, string> = SCRIPT) =>
  request(`${h.url}/`, { method: 'POST', path, headers, body: form(fields) });
const browserPost = (path: string, fields: Fields, headers: Record<string, string> = {}) => post(path, fields, { ...BROWSER, ...headers });
const visitor: Fields = [
  ['email', 'visitor@example.org'],
  ['message', 'Hello'],
];
const withKey = (key = accessKey): Fields => [['access_key', key], ...visitor];
const rows = () => count(h, 'submissions');
const mailOf = (id: string) =>
  eventually(async () => h.sink.messages.find((mail) => mail.parsed.messageId === `<submission-${id}@example.test>`), 20_000, `the email of ${id}`);
const mailsTo = (address: string) => h.sink.messages.filter((mail: ReceivedMail) => mail.envelope.to.includes(address));

const INVALID_KEY = {
  success: false,
  message: 'Invalid or inactive verification key.',
  errors: { access_key: ['Invalid or inactive verification key.'], __all__: ['Invalid or inactive verification key.'] },
};

describe('the key in the path: POST /f/<key>', () => {
  it('takes a submission as POST /api/contact-api/ does, and answers an unknown key with the same 403', async () => {
    const ok = await post(`/f/${accessKey}`, visitor);
    expect(ok.status).toBe(200);
    expect(ok.json).toMatchObject({ success: true, submission_id: expect.any(String) });
    const row = await submissionRow(h, ok.json.submission_id);
    expect(row!.custom_fields).toEqual([]);
    // The same key in the body too is one key; another key there is refused.
    expect((await post(`/f/${accessKey}`, withKey())).status).toBe(200);
    const two = await post(`/f/${accessKey}`, withKey(restrictedKey));
    expect(two.status).toBe(400);
    expect(two.json.errors.access_key).toEqual(['Must be given once.']);

    const wrong = await post('/f/00000000-0000-4000-8000-000000000000', visitor);
    expect(wrong.status).toBe(403);
    expect(wrong.json).toEqual(INVALID_KEY);
  });

  it('authenticates every spelling that reaches the route, and no other spelling reaches one', async () => {
    const before = await rows();
    // Reaches the route: the path's key is authenticated as a body's key would be.
    const trailing = await post(`/f/${accessKey}/`, visitor);
    expect(trailing.status).toBe(200);
    for (const spelling of [`/f/${accessKey.toUpperCase()}`, `/f/%2e%2e`, `/f/${encodeURIComponent('../api/contact-api')}`, '/f/%00', `/f/${accessKey}x`]) {
      const response = await post(spelling, visitor);
      expect(response.status, spelling).toBeGreaterThanOrEqual(400);
      expect(response.status, spelling).toBeLessThan(500);
      expect(response.json?.success, spelling).toBe(false);
    }
    // Another spelling of the path is no route: never a submission with the key unchecked.
    for (const spelling of [
      `/F/${accessKey}`,
      `/f//${accessKey}`,
      `/f/%2e%2e/api/contact-api/`,
      `/f/../api/contact-api/`,
      `/f/${accessKey}/extra`,
      '/f/',
      '/f',
    ]) {
      const response = await post(spelling, visitor);
      expect([403, 404], spelling).toContain(response.status);
    }
    // A key spelled with its case changed is another value: the spec's 403.
    expect((await post(`/f/${accessKey.toUpperCase()}`, visitor)).json).toEqual(INVALID_KEY);
    expect(await rows()).toBe(before + 1);
  });

  it('answers the preflight with the three CORS headers, and every answer with Allow-Origin', async () => {
    const preflight = await request(`${h.url}/f/${accessKey}`, { method: 'OPTIONS', headers: { origin: 'https://site.test' } });
    expect(preflight.status).toBe(204);
    expect(preflight.headers['access-control-allow-methods']).toBe('POST, OPTIONS');
    expect(preflight.headers['access-control-allow-headers']).toBe('Content-Type, X-Requested-With, Accept');
    const refused = await post('/f/00000000-0000-4000-8000-000000000000', visitor, { ...SCRIPT, origin: 'https://site.test' });
    expect(refused.headers['access-control-allow-origin']).toBe('*');
  });
});

describe('the reserved fields of other form services', () => {
  it.each([
    ['_replyto', 'email'],
    ['replyto', 'email'],
  ])('%s stands for the sender address: the Reply-To of the email, never a field in it', async (alias) => {
    const response = await post('/api/contact-api/', [
      ['access_key', accessKey],
      [alias, 'replier@example.org'],
      ['message', 'Hello'],
    ]);
    expect(response.status).toBe(200);
    const mail = await mailOf(response.json.submission_id);
    expect(mail.parsed.replyTo?.value[0]?.address).toBe('replier@example.org');
    expect(mail.parsed.text).not.toContain(alias);
  });

  it.each([
    ['_subject', 'Hello\r\nBcc: victim@example.com'],
    ['_replyto', 'a@example.org\r\nBcc: victim@example.com'],
    ['replyto', 'not an address'],
    ['from_name', 'Mallory\nBcc: victim@example.com'],
    ['_next', 'x'.repeat(2049)],
  ])('refuses %s with the rules of its own field: 400 naming it', async (field, value) => {
    const before = await rows();
    const response = await post('/api/contact-api/', [...withKey(), [field, value]]);
    expect(response.status).toBe(400);
    expect(response.json).toMatchObject({
      success: false,
      message: 'Invalid fields.',
      errors: { __all__: ['Invalid fields.'], [field]: [expect.any(String)] },
    });
    expect(await rows()).toBe(before);
  });

  it('_subject is the subject; the service’s own subject wins when both are given', async () => {
    const aliased = await post('/api/contact-api/', [...withKey(), ['_subject', 'New submission!']]);
    expect((await mailOf(aliased.json.submission_id)).parsed.subject).toBe('New submission!');
    const both = await post('/api/contact-api/', [...withKey(), ['_subject', 'Theirs'], ['subject', 'Ours']]);
    expect((await mailOf(both.json.submission_id)).parsed.subject).toBe('Ours');
  });

  it('from_name is the sender’s name when the form has no name field', async () => {
    const response = await post('/api/contact-api/', [...withKey(), ['from_name', 'Mission Control']]);
    expect((await submissionRow(h, response.json.submission_id))!.custom_fields).toEqual([['name', 'Mission Control']]);
    const named = await post('/api/contact-api/', [...withKey(), ['name', 'Ada'], ['from_name', 'Mission Control']]);
    expect((await submissionRow(h, named.json.submission_id))!.custom_fields).toEqual([['name', 'Ada']]);
  });

  it.each(['_next', '_redirect', 'redirect'])('%s passes the same checks as success_url', async (field) => {
    const ok = await browserPost('/api/contact-api/', [...withKey(), [field, 'https://site.test/thanks']]);
    expect(ok.status).toBe(303);
    expect(ok.headers.location).toMatch(/^https:\/\/site\.test\/thanks\?submission_id=/);
    for (const unsafe of ['javascript:alert(1)', '//evil.test/x', '/.//evil.test', '/%2e//evil.test', 'data:text/html,hi']) {
      const response = await browserPost('/api/contact-api/', [...withKey(), [field, unsafe]]);
      expect(response.status, unsafe).toBe(303);
      expect(response.headers.location, unsafe).toMatch(/^\/contact\/success\/\?submission_id=/);
    }
    // A restricted key: only its domains.
    const restricted = (target: string) => browserPost('/api/contact-api/', [...withKey(restrictedKey), [field, target]], { origin: 'https://example.com' });
    expect((await restricted('https://evil.test/')).headers.location).toMatch(/^\/contact\/success\/\?/);
    expect((await restricted('https://www.example.com/ok')).headers.location).toMatch(/^https:\/\/www\.example\.com\/ok\?submission_id=/);
  });

  it.each(['_gotcha', '_honeypot', '_honey', 'botcheck'])('a filled %s is a bot: answered as accepted, nothing kept or sent', async (field) => {
    const before = await rows();
    const bot = `Buy now ${field}`;
    const response = await browserPost(`/f/${accessKey}`, [
      ['email', 'visitor@example.org'],
      ['message', bot],
      [field, 'http://spam.example'],
      ['_next', 'https://site.test/thanks'],
    ]);
    expect(response.status).toBe(303);
    // The service's own page: no key was checked, so none vouches for the bot's _next.
    expect(response.headers.location).toMatch(/^\/contact\/success\/\?submission_id=/);
    // Empty, as a person leaves it: the submission goes through, without the field.
    const person = await post(`/f/${accessKey}`, [...visitor, [field, '']]);
    expect(person.status).toBe(200);
    expect((await submissionRow(h, person.json.submission_id))!.custom_fields).toEqual([]);
    await mailOf(person.json.submission_id);
    await mailSettled(h);
    expect(await rows()).toBe(before + 1);
    expect(h.sink.messages.some((mail) => mail.raw.toString('utf8').includes(bot))).toBe(false);
  });

  it('_cc sends to nobody (the key’s own recipients, who consented, are the only copies), and _autoresponse sends nothing to the visitor', async () => {
    const response = await post(`/f/${accessKey}`, [
      ...visitor,
      ['_cc', 'bystander@elsewhere.example,another@elsewhere.example'],
      ['_autoresponse', 'Thanks! Claim your prize at https://phish.example'],
      ['_template', 'table'],
      ['_captcha', 'false'],
    ]);
    expect(response.status).toBe(200);
    const mail = await mailOf(response.json.submission_id);
    await mailSettled(h);
    expect(mail.envelope.to).toEqual(['owner@example.test']);
    expect(mailsTo('bystander@elsewhere.example')).toEqual([]);
    expect(mailsTo('another@elsewhere.example')).toEqual([]);
    expect(mailsTo('visitor@example.org')).toEqual([]);
    expect(h.sink.messages.some((sent) => sent.raw.toString('utf8').includes('phish.example'))).toBe(false);
    const [recipients] = await h.sql<{ n: number }>('select count(*)::int as n from key_recipients');
    expect(recipients!.n).toBe(0);
  });

  it('shows no reserved field in the stored record, the email or the webhook payload', async () => {
    const reserved: Fields = [
      ['_replyto', 'visitor@example.org'],
      ['_subject', 'Hi'],
      ['_next', '/thanks/'],
      ['_redirect', '/thanks/'],
      ['redirect', '/thanks/'],
      ['_gotcha', ''],
      ['_honey', ''],
      ['_honeypot', ''],
      ['botcheck', ''],
      ['_cc', 'cc@elsewhere.example'],
      ['_template', 'box'],
      ['_autoresponse', 'auto'],
      ['from_name', 'Site'],
    ];
    const response = await post(`/f/${accessKey}`, [['message', 'Hello'], ['topic', 'sales'], ...reserved]);
    expect(response.status).toBe(200);
    const id = response.json.submission_id as string;
    expect((await submissionRow(h, id))!.custom_fields).toEqual([
      ['name', 'Site'],
      ['topic', 'sales'],
    ]);
    const mail = await mailOf(id);
    const delivered = await eventually(async () => receiver.received.find((hit) => hit.body.includes(id)), 20_000, 'the webhook');
    for (const [name] of reserved) {
      expect(mail.parsed.text).not.toContain(`${name}:`);
      expect(mail.parsed.html || '').not.toContain(`>${name}<`);
      expect(delivered.body).not.toContain(`"${name}"`);
    }
  });
});

describe('a refused browser form', () => {
  it.each([
    ['a form without email', visitor.slice(1), 'Missing required fields.', 'email: This field is required.'],
    ['a line break in the subject', [...visitor, ['subject', 'Hi\r\nBcc: victim@example.com']], 'Invalid fields.', 'subject: Must not contain line breaks.'],
    ['a line break in _subject', [...visitor, ['_subject', 'Hi\nBcc: victim@example.com']], 'Invalid fields.', '_subject: Must not contain line breaks.'],
  ] as Array<[string, Fields, string, string]>)('names the field and why for %s, on the error page', async (_, fields, message, detail) => {
    const response = await browserPost(`/f/${accessKey}`, fields);
    expect(response.status).toBe(303);
    const location = new URL(response.headers.location!, h.url);
    expect(location.pathname).toBe('/contact/error/');
    expect(location.searchParams.get('error')).toBe(message);
    const page = await request(location.toString());
    expect(page.text).toContain(message);
    expect(page.text).toContain(detail);
    // A script gets the spec's body: the message, and the field under `errors`.
    const json = await post(`/f/${accessKey}`, fields);
    expect(json.json.message).toBe(message);
    expect(json.json.errors.__all__).toEqual([message]);
    expect(`${detail.split(':')[0]}: ${json.json.errors[detail.split(':')[0]!][0]}`).toBe(detail);
  });
});
