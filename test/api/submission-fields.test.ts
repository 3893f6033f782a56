// POST /api/contact-api/: body types, field rules, keys and the domain rule.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startHarness, type Harness } from '../support/harness.ts';
import { submissionRow } from '../support/rows.ts';
import { count, submitJson, submitter } from '../support/client.ts';
import { form, request } from '../support/http.ts';

let h: Harness;
let accessKey: string;
const endpoint = () => `${h.url}/api/contact-api/`;
beforeAll(async () => {
  h = await startHarness();
  accessKey = (await h.createKey({ email: 'owner@example.test' })).key;
});
afterAll(() => h?.stop());

const submit = submitter(
  () => h,
  () => ({ access_key: accessKey, email: 'visitor@example.org', message: 'Hello' }),
);
const countRows = () => count(h, 'submissions');
const rowOf = async (id: string) => (await submissionRow(h, id))!;

describe('body types', () => {
  it('accepts a urlencoded form and keeps field order and repeated names', async () => {
    const response = await request(endpoint(), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: form([
        ['topic', 'sales'],
        ['access_key', accessKey],
        ['email', 'visitor@example.org'],
        ['2', 'numeric name'],
        ['message', 'Hi'],
        ['topic', 'support'],
      ]),
    });
    expect(response.status).toBe(200);
    const row = await rowOf(response.json.submission_id);
    expect(row.custom_fields).toEqual([
      ['topic', 'sales'],
      ['2', 'numeric name'],
      ['topic', 'support'],
    ]);
  });

  it.each([
    ['text/plain', 'hello'],
    ['application/xml', '<a/>'],
    [undefined, 'email=a'],
  ])('refuses content type %s with 415', async (contentType, body) => {
    const response = await request(endpoint(), {
      method: 'POST',
      headers: contentType ? { 'content-type': contentType } : {},
      body,
    });
    expect(response.status).toBe(415);
    expect(response.json).toEqual({ success: false, message: expect.stringContaining('Unsupported content type'), errors: { __all__: [expect.any(String)] } });
  });

  it('refuses JSON and urlencoded bodies over 1 MB with 413', async () => {
    const big = 'x'.repeat(1024 * 1024);
    const json = await submitJson(h, { access_key: accessKey, email: 'a@example.org', message: big });
    expect(json.status).toBe(413);
    expect(json.json.success).toBe(false);
    const urlencoded = await request(endpoint(), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: form([
        ['access_key', accessKey],
        ['email', 'a@example.org'],
        ['message', big],
      ]),
    });
    expect(urlencoded.status).toBe(413);
    expect(urlencoded.json.success).toBe(false);
  });

  it.each([
    ['malformed JSON', '{"email": '],
    ['a JSON array', '[1, 2]'],
    ['a JSON number', '42'],
  ])('refuses %s with 400', async (_, body) => {
    const before = await countRows();
    const response = await submitJson(h, body);
    expect(response.status).toBe(400);
    expect(response.json).toMatchObject({ success: false, errors: { __all__: [expect.any(String)] } });
    expect(await countRows()).toBe(before);
  });
});

describe('fields', () => {
  it('answers a missing key alone with the spec body', async () => {
    const response = await submitJson(h, { email: 'a@example.org', message: '   ' });
    expect(response.status).toBe(400);
    expect(response.json).toEqual({
      success: false,
      message: 'Missing required fields.',
      errors: { __all__: ['Missing required fields.'], access_key: ['This field is required.'], message: ['This field is required.'] },
    });
  });

  it.each([
    ['an object as email', { email: { address: 'a@example.org' } }, 'email'],
    ['an array as message', { message: ['a', 'b'] }, 'message'],
    ['an invalid sender address', { email: 'not-an-address' }, 'email'],
    ['CR LF in the email', { email: 'a@example.org\r\nBcc: victim@example.com' }, 'email'],
    ['LF in the subject', { subject: 'Hello\nBcc: victim@example.com' }, 'subject'],
    ['an object as subject', { subject: { a: 1 } }, 'subject'],
    ['an object as a custom field', { extra: { nested: true } }, 'extra'],
    ['101 custom fields', Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`field${i}`, 'v'])), 'field100'],
    ['a custom value over 100 KB', { notes: 'x'.repeat(100 * 1024 + 1) }, 'notes'],
  ])('refuses %s with 400 naming the field', async (_, body, field) => {
    const before = await countRows();
    const response = await submit(body);
    expect(response.status).toBe(400);
    expect(response.json.success).toBe(false);
    expect(response.json.errors[field]).toEqual([expect.any(String)]);
    expect(await countRows()).toBe(before);
  });

  it('refuses a custom field name over 200 characters', async () => {
    const response = await submit({ ['n'.repeat(201)]: 'v' });
    expect(response.status).toBe(400);
    expect(JSON.stringify(response.json.errors)).toContain('200 characters');
  });

  it('accepts exactly 100 custom fields and a 100 KB value', async () => {
    const fields = Object.fromEntries(Array.from({ length: 99 }, (_, i) => [`field${i}`, 'v']));
    const response = await submit({ ...fields, notes: 'x'.repeat(100 * 1024) });
    expect(response.status).toBe(200);
    expect((await rowOf(response.json.submission_id)).custom_fields).toHaveLength(100);
  });

  it('keeps names such as __proto__, constructor and toString as plain data', async () => {
    const body = '{"access_key":"KEY","email":"a@example.org","message":"m","__proto__":"p","constructor":"c","toString":"t","hasOwnProperty":"h"}'.replace(
      'KEY',
      accessKey,
    );
    const response = await submitJson(h, body);
    expect(response.status).toBe(200);
    expect((await rowOf(response.json.submission_id)).custom_fields).toEqual([
      ['__proto__', 'p'],
      ['constructor', 'c'],
      ['toString', 't'],
      ['hasOwnProperty', 'h'],
    ]);
  });

  it('uses the given subject, or generates one', async () => {
    const given = await submit({ subject: 'Quote request' });
    const generated = await submit({});
    expect((await rowOf(given.json.submission_id)).subject).toBe('Quote request');
    expect((await rowOf(generated.json.submission_id)).subject).toBe('New contact form submission from visitor@example.org');
  });

  it.each([true, 'true', '1', 'on', 'yes', 'TRUE'])('saves without sending when not_email_sent is %j', async (value) => {
    const response = await submit({ not_email_sent: value, message: `skip ${String(value)}` });
    expect(response.status).toBe(200);
    expect(response.json.email_status).toBe('skipped');
    expect((await rowOf(response.json.submission_id)).email_status).toBe('skipped');
  });

  it.each([false, 'false', '0', 'no', 'off'])('sends when not_email_sent is %j', async (value) => {
    const response = await submit({ not_email_sent: value });
    expect(response.json.email_status).toBe('queued');
    await eventually(async () => ((await rowOf(response.json.submission_id)).email_status === 'sent' ? true : undefined));
  });

  it('sends no email for a skipped submission', async () => {
    const marker = `skip-marker-${Date.now()}`;
    await submit({ not_email_sent: true, message: marker });
    const sent = await submit({ message: 'after the skipped one' });
    await eventually(async () => ((await rowOf(sent.json.submission_id)).email_status === 'sent' ? true : undefined));
    expect(h.sink.messages.some((mail) => mail.parsed.text?.includes(marker))).toBe(false);
  });
});

describe('keys', () => {
  it.each(['disabled', 'deleted'] as const)('refuses a %s key with 403', async (status) => {
    const key = await h.createKey({ status });
    const response = await submit({ access_key: key.key });
    expect(response.status).toBe(403);
    expect(response.json.errors.access_key).toEqual(['Invalid or inactive verification key.']);
  });
});

describe('domain rule', () => {
  let restricted: string;
  beforeAll(async () => {
    restricted = (await h.createKey({ useDomain: true, domains: ['example.com'] })).key;
  });
  const mismatch = {
    success: false,
    message: 'Verification key domain mismatch.',
    errors: { access_key: ['Verification key domain mismatch.'], __all__: ['Domain does not match.'] },
  };

  it.each([
    ['Origin on the domain', { origin: 'https://example.com' }, 200],
    ['Origin on a subdomain, with a port', { origin: 'http://shop.example.com:8080' }, 200],
    ['Referer on a subdomain, no Origin', { referer: 'https://www.example.com/contact?x=1' }, 200],
    ['Origin on another domain', { origin: 'https://notexample.com' }, 400],
    ['Origin on a look-alike suffix', { origin: 'https://example.com.evil.test' }, 400],
    ['Origin "null"', { origin: 'null' }, 400],
    ['neither Origin nor Referer', {}, 400],
    ['Origin elsewhere, Referer on the domain', { origin: 'https://evil.test', referer: 'https://example.com/' }, 400],
  ])('%s → %i', async (_, headers, status) => {
    const response = await submit({ access_key: restricted }, headers);
    expect(response.status).toBe(status);
    if (status === 400) expect(response.json).toEqual(mismatch);
  });

  it('does not restrict a key without use_domain', async () => {
    expect((await submit({}, { origin: 'https://anywhere.test' })).status).toBe(200);
  });
});

describe('errors', () => {
  it('answers an unknown route with a form-style 404', async () => {
    const response = await request(`${h.url}/no/such/path`);
    expect(response.status).toBe(404);
    expect(response.json).toMatchObject({ success: false });
  });
});

describe('headers kept with the row', () => {
  it('accepts an Origin or Referer longer than the 2,048 characters kept, and keeps their start', async () => {
    const referer = `https://example.com/${'a'.repeat(5_000)}`;
    const response = await submit({}, { referer });
    expect(response.status).toBe(200);
    expect((await rowOf(response.json.submission_id)).origin).toBe(referer.slice(0, 2048));
  });
});
