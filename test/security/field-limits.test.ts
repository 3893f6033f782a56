// Cheap requests that would cost a lot: a body with very many fields is refused at the first limit
// it crosses, its fields counted before they are parsed, and a 400 lists at most 20 fields.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../support/harness.ts';
import { count } from '../support/client.ts';
import { request } from '../support/http.ts';
import { multipartBody, postRaw } from '../support/multipart.ts';

const TOO_MANY_FIELDS = 'Too many fields: at most 200 per request.';
/** The spec's form-style error body for a message that stands alone. */
const alone = (message: string) => ({ success: false, message, errors: { __all__: [message] } });

let h: Harness;
let key: string;
beforeAll(async () => {
  h = await startHarness({ worker: false });
  key = (await h.createKey()).key;
});
afterAll(() => h?.stop());

const countRows = () => count(h, 'submissions');

const post = (path: string, contentType: string, body: string | Buffer) =>
  request(`${h.url}${path}`, { method: 'POST', headers: { 'content-type': contentType, accept: 'application/json' }, body });

/** `{"0":10,"1":10,…,"255r":10}` (base-36 names): 100,000 fields make about 950 KB, under the 1 MB body limit. */
const manyJsonFields = (count: number, extra: Record<string, unknown> = {}) => {
  const fields = Array.from({ length: count }, (_, i) => `"${i.toString(36)}":10`).join(',');
  const head = JSON.stringify(extra).slice(1, -1);
  return `{${head}${head && fields ? ',' : ''}${fields}}`;
};
const submission = { access_key: '', email: 'visitor@example.org', message: 'hello' };

describe('a body with very many fields', () => {
  it('JSON, 100,000 fields (950 KB) on POST /api/contact-api/: a short 400, nothing saved', async () => {
    const body = manyJsonFields(100_000, { ...submission, access_key: key });
    expect(body.length).toBeGreaterThan(900_000);
    const before = await countRows();
    const response = await post('/api/contact-api/', 'application/json', body);
    expect(response.status).toBe(400);
    expect(response.json).toEqual(alone(TOO_MANY_FIELDS));
    expect(await countRows()).toBe(before);
  });

  it('JSON, 100,000 fields on POST /: the same short 400', async () => {
    const response = await post('/', 'application/json', manyJsonFields(100_000, { email: 'owner@example.org' }));
    expect(response.status).toBe(400);
    expect(response.json).toEqual(alone(TOO_MANY_FIELDS));
  });

  it('urlencoded, 100,000 fields: the same short 400', async () => {
    const pairs = Array.from({ length: 100_000 }, (_, i) => `f${i}=v`).join('&');
    const response = await post('/api/contact-api/', 'application/x-www-form-urlencoded', `access_key=${key}&email=a%40example.org&message=m&${pairs}`);
    expect(response.status).toBe(400);
    expect(response.json).toEqual(alone(TOO_MANY_FIELDS));
  });

  it('multipart, 500 fields: the same short 400', async () => {
    const { body, contentType } = multipartBody([
      { name: 'access_key', value: key },
      { name: 'email', value: 'visitor@example.org' },
      { name: 'message', value: 'hello' },
      ...Array.from({ length: 500 }, (_, i) => ({ name: `f${i}`, value: 'v' })),
    ]);
    const response = await postRaw(`${h.url}/api/contact-api/`, body, { 'content-type': contentType });
    expect(response.status).toBe(400);
    expect(response.json).toEqual(alone(TOO_MANY_FIELDS));
  });

  it('JSON nested deeper than 10 levels: a 400 before parsing', async () => {
    const response = await post('/api/contact-api/', 'application/json', `{"a":${'['.repeat(11)}${']'.repeat(11)}}`);
    expect(response.status).toBe(400);
    expect(response.json).toEqual(alone('Malformed request body: nested deeper than 10 levels.'));
  });
});

describe('the first limit crossed ends the check', () => {
  it('150 custom fields: one error naming the 101st, not one per extra field', async () => {
    const message = 'Too many custom fields: at most 100.';
    const response = await post('/api/contact-api/', 'application/json', manyJsonFields(150, { ...submission, access_key: key }));
    expect(response.status).toBe(400);
    expect(response.json.message).toBe(message);
    expect(Object.values(response.json.errors)).toEqual([[message], [message]]);
  });

  it('60 bad fields: the 400 lists 20 of them and counts the rest', async () => {
    const bad = Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`bad${i}`, { nested: true }]));
    const response = await post('/api/contact-api/', 'application/json', JSON.stringify({ ...submission, access_key: key, ...bad }));
    expect(response.status).toBe(400);
    const names = Object.keys(response.json.errors);
    expect(names.filter((name) => name !== '__all__')).toEqual(Array.from({ length: 20 }, (_, i) => `bad${i}`));
    expect(response.json.errors.__all__).toEqual(['Invalid fields.', 'And 40 more fields with errors.']);
    expect(response.json.errors.bad0).toEqual(['Must be a string or a list of strings.']);
  });
});
