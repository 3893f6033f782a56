// OpenAPI 3.1 generated from the request schemas, and the docs page rendered from it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../support/harness.ts';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ worker: false, env: { PUBLIC_URL: 'https://forms.example.test' } });
});
afterAll(() => h?.stop());

describe('API description', () => {
  it('serves OpenAPI 3.1 whose request schemas are the validating ones', async () => {
    const response = await fetch(`${h.url}/openapi.json`);
    expect(response.status).toBe(200);
    const document = (await response.json()) as any;
    expect(document.openapi).toBe('3.1.0');
    expect(document.servers).toEqual([{ url: 'https://forms.example.test' }]);

    const submission = document.paths['/api/contact-api/'].post;
    expect(Object.keys(submission.requestBody.content)).toEqual(['application/json', 'application/x-www-form-urlencoded', 'multipart/form-data']);
    const schema = submission.requestBody.content['application/json'].schema;
    expect(schema.required).toEqual(['access_key', 'email', 'message']);
    expect(schema.properties.email).toMatchObject({ type: 'string', format: 'email', maxLength: 254 });
    expect(schema.properties.subject.maxLength).toBe(998);
    expect(Object.keys(submission.responses)).toEqual(expect.arrayContaining(['200', '303', '400', '403', '413', '415', '429', '500', '503']));
    expect(submission.responses['503'].headers['Retry-After']).toBeDefined();

    const keys = document.paths['/'].post.requestBody.content['application/json'].schema;
    expect(keys.properties.requestType.enum).toEqual(['generateKey', 'getKeys']);
    expect(document.paths['/admin/keys/{key}'].patch.security).toEqual([{ adminToken: [] }]);
    // Unknown fields are refused (400), and the document says so: a webhook, a chat channel by its URL, a Telegram chat.
    const addWebhook = document.paths['/admin/keys/{key}/webhooks'].post.requestBody.content['application/json'].schema;
    expect(addWebhook.oneOf.map((option: any) => option.required)).toEqual([['url'], ['kind', 'url'], ['kind', 'bot_token', 'chat_id']]);
    expect(addWebhook.oneOf.every((option: any) => option.additionalProperties === false)).toBe(true);
    expect(document.paths['/admin/keys/{key}/webhooks/{id}'].patch.requestBody.content['application/json'].schema.additionalProperties).toBe(false);
    expect(document.paths['/api/contact-api/'].post.responses['200'].content['application/json'].schema.properties.email_status.enum).toContain('held');
  });

  it('describes every route the routers register', async () => {
    const document = (await (await fetch(`${h.url}/openapi.json`)).json()) as any;
    const undescribed = Object.entries(document.paths).flatMap(([path, methods]: [string, any]) =>
      Object.entries(methods)
        .filter(([, operation]: [string, any]) => operation['x-undescribed'])
        .map(([method]) => `${method} ${path}`),
    );
    expect(undescribed).toEqual([]);
    for (const path of ['/admin/submissions.csv', '/confirm', '/healthz', '/contact/success/']) expect(document.paths[path], path).toBeDefined();
  });

  it('renders the docs page from the same document', async () => {
    const response = await fetch(`${h.url}/docs`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await response.text();
    expect(html).toContain('POST /api/contact-api/');
    expect(html).toContain('PATCH /admin/keys/{key}');
    expect(html).toContain('&quot;maxLength&quot;: 254');
    expect(html).not.toContain('<p></p>'); // an operation without a summary or description has no empty paragraph
  });
});
