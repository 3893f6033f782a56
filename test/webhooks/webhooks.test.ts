// Webhooks end to end through HTTP: endpoints set by the admin API, a submission with a file
// delivered to a local receiver, signed per Standard Webhooks (verified with the `standardwebhooks`
// package), the file link byte-identical, 503s retried until delivered, 4xx failed at once, and
// the SSRF guard: refused literals and localhost refused when added, every address judged again at
// each delivery, loopback allowed only through WEBHOOK_ALLOW.
import { createHash } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { updateWebhookEndpoint } from '../support/factories.ts';
import { eventually, postJson, startHarness, type Harness, type TestKey } from '../support/harness.ts';
import { startReceiver, type Receiver } from '../support/webhook-receiver.ts';
import { describeBuild } from '../../src/shared/infra/version.ts';

const TOKEN = 'test-admin-token-0123456789';
let h: Harness;
let receiver: Receiver;

beforeAll(async () => {
  h = await startHarness({
    env: {
      ADMIN_TOKEN: TOKEN,
      WEBHOOK_ALLOW: '127.0.0.2',
      WEBHOOK_RETRY_BACKOFF_MS: '100',
      WEBHOOK_RETRY_MAX_BACKOFF_MS: '400',
      WEBHOOK_DISABLE_AFTER: '2',
      // The reconciler adds a missing job after a minute: a delivery here is its own job's.
      RECONCILE_AFTER_MS: '60000',
    },
  });
  receiver = await startReceiver('127.0.0.2');
});
afterAll(async () => {
  await receiver?.close();
  await h?.stop();
});

async function admin(method: string, path: string, body?: unknown) {
  const response = await fetch(`${h.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, json: text ? JSON.parse(text) : undefined };
}

async function addWebhook(key: TestKey, url: string): Promise<{ id: string; secret: string }> {
  const created = await admin('POST', `/admin/keys/${key.key}/webhooks`, { url });
  expect(created.status).toBe(201);
  return { id: created.json.webhook.id, secret: created.json.secret };
}

async function submitWithFile(key: TestKey, file: Buffer) {
  const form = new FormData();
  form.append('access_key', key.key);
  form.append('email', 'sender@example.test');
  form.append('message', 'Hello over a webhook');
  form.append('colour', 'teal');
  form.append('size', 'XL');
  form.append('attachment', new Blob([file], { type: 'application/octet-stream' }), 'report.bin');
  const response = await fetch(`${h.url}/api/contact-api/`, { method: 'POST', body: form, headers: { accept: 'application/json' } });
  return { status: response.status, json: (await response.json()) as any };
}

const deliveries = async (key: TestKey) => (await admin('GET', `/admin/keys/${key.key}/webhook-deliveries`)).json.deliveries as any[];

describe('webhooks', () => {
  it('delivers a submission with a file, signed, its link byte-identical, after two 503s', async () => {
    const key = await h.createKey();
    const hook = await addWebhook(key, receiver.url);
    expect(hook.secret).toMatch(/^whsec_/);
    // The secret is shown once: the listing does not carry it.
    expect(JSON.stringify((await admin('GET', `/admin/keys/${key.key}/webhooks`)).json)).not.toContain(hook.secret);

    receiver.script.push({ status: 503 }, { status: 503, headers: { 'retry-after': '0' } });
    const file = Buffer.from(Array.from({ length: 70_000 }, (_, i) => (i * 31) % 256));
    const submitted = await submitWithFile(key, file);
    expect(submitted.status).toBe(200);
    const id = submitted.json.submission_id as string;

    const delivered = await eventually(
      async () => {
        const [row] = await deliveries(key);
        return row?.status === 'sent' ? row : undefined;
      },
      20_000,
      'the webhook delivered',
    );
    expect(delivered).toMatchObject({ submission_id: id, attempts: 3, last_response_code: 200, last_error: null });

    const calls = receiver.received.filter((call) => JSON.parse(call.body).data.id === id);
    expect(calls).toHaveLength(3);
    const last = calls[2]!;
    const headers = {
      'webhook-id': String(last.headers['webhook-id']),
      'webhook-timestamp': String(last.headers['webhook-timestamp']),
      'webhook-signature': String(last.headers['webhook-signature']),
    };
    // The receiver's logs say which code posted: the name, then the version (docs/upgrading.md).
    expect(last.headers['user-agent']).toBe(`contact-form-service-webhooks/${describeBuild().version}`);
    // The same webhook-id on every attempt, so the receiver can drop duplicates.
    expect(new Set(calls.map((call) => call.headers['webhook-id']))).toEqual(new Set([headers['webhook-id']]));
    const payload = new Webhook(hook.secret).verify(last.body, headers) as any;
    expect(payload.type).toBe('submission.created');
    expect(payload.data).toMatchObject({
      id,
      email: 'sender@example.test',
      message: 'Hello over a webhook',
      fields: [
        { name: 'colour', value: 'teal' },
        { name: 'size', value: 'XL' },
      ],
    });
    expect(() => new Webhook(`whsec_${Buffer.alloc(24, 1).toString('base64')}`).verify(last.body, headers)).toThrow();
    const [described] = payload.data.files;
    expect(described).toMatchObject({ name: 'report.bin', type: 'application/octet-stream', size: file.length });
    expect(described.sha256).toBe(createHash('sha256').update(file).digest('hex'));
    const download = Buffer.from(await (await fetch(described.url)).arrayBuffer());
    expect(download.equals(file)).toBe(true);

    // The OpenAPI document's `webhooks` describes exactly this body.
    const document = (await (await fetch(`${h.url}/openapi.json`)).json()) as any;
    const schema = document.webhooks['submission.created'].post.requestBody.content['application/json'].schema;
    expect(Object.keys(payload).sort()).toEqual(Object.keys(schema.properties).sort());
    expect(Object.keys(payload.data).sort()).toEqual(Object.keys(schema.properties.data.properties).sort());
    expect(Object.keys(described).sort()).toEqual(Object.keys(schema.properties.data.properties.files.items.properties).sort());
  });

  it('fails a delivery at once on a 4xx other than 408 and 429, and re-sends it on request', async () => {
    const key = await h.createKey();
    await addWebhook(key, receiver.url);
    receiver.script.push({ status: 410 });
    const submitted = await postJson(`${h.url}/api/contact-api/`, { access_key: key.key, email: 'a@example.test', message: 'gone?' });
    expect(submitted.status).toBe(200);
    const failed = await eventually(
      async () => {
        const [row] = await deliveries(key);
        return row?.status === 'failed' ? row : undefined;
      },
      20_000,
      'the webhook failed',
    );
    expect(failed).toMatchObject({ attempts: 1, last_response_code: 410 });
    expect(failed.last_error).toContain('HTTP 410');

    const resent = await admin('POST', `/admin/keys/${key.key}/webhook-deliveries/${failed.delivery_id}/resend`);
    expect(resent.status).toBe(202);
    await eventually(async () => ((await deliveries(key))[0]?.status === 'sent' ? true : undefined), 20_000, 'the re-sent webhook');
  });

  it('refuses at creation an address literal or localhost that the rule refuses, in the words a delivery would record', async () => {
    const key = await h.createKey();
    const refusals: Array<[string, string]> = [
      ['http://127.0.0.3:3100/', 'refused: 127.0.0.3 is a loopback address'],
      ['http://[::1]/', 'refused: ::1 is a loopback address'],
      ['http://[::ffff:7f00:3]:9/', 'refused: ::ffff:7f00:3 is a loopback address'],
      ['http://169.254.169.254/latest/meta-data', 'refused: 169.254.169.254 is a link-local address'],
      ['http://[fe80::1]:9/', 'refused: fe80::1 is a link-local address'],
      ['http://10.1.2.3/', 'refused: 10.1.2.3 is a private address'],
      ['http://localhost/', 'refused: localhost is resolved to 127.0.0.1, a loopback address'],
      ['http://LocalHost./hook', 'refused: localhost is resolved to 127.0.0.1, a loopback address'],
      ['http://app.localhost:8080/', 'refused: app.localhost is resolved to 127.0.0.1, a loopback address'],
    ];
    for (const [url, message] of refusals) {
      const answer = await admin('POST', `/admin/keys/${key.key}/webhooks`, { url });
      expect(answer.status, url).toBe(400);
      expect(answer.json.errors.url, url).toEqual([`${message}; add it to WEBHOOK_ALLOW to allow it`]);
    }
    expect(await h.sql('select id from webhook_endpoints where key_id = $1', [key.id])).toHaveLength(0);
    // WEBHOOK_ALLOW lists 127.0.0.2: that literal is accepted.
    expect((await admin('POST', `/admin/keys/${key.key}/webhooks`, { url: 'http://127.0.0.2:9/' })).status).toBe(201);
  });

  it('refuses the IPv6 forms that carry an IPv4 address: IPv4-compatible whole, IPv4-mapped as the IPv4 inside, NAT64 whole', async () => {
    const key = await h.createKey();
    const refusals: Array<[string, string]> = [
      ['http://[::127.0.0.1]/', 'refused: ::7f00:1 is a deprecated IPv4-compatible address'],
      ['http://[::10.1.2.3]:9/', 'refused: ::a01:203 is a deprecated IPv4-compatible address'],
      ['http://[::8.8.8.8]/', 'refused: ::808:808 is a deprecated IPv4-compatible address'],
      ['http://[::2]/', 'refused: ::2 is a deprecated IPv4-compatible address'],
      ['http://[::ffff:10.1.2.3]/', 'refused: ::ffff:a01:203 is a private address'],
      ['http://[::ffff:169.254.169.254]/', 'refused: ::ffff:a9fe:a9fe is a link-local address'],
      ['http://[64:ff9b::127.0.0.1]/', 'refused: 64:ff9b::7f00:1 is a NAT64 address'],
      ['http://[64:ff9b:1::10.1.2.3]/', 'refused: 64:ff9b:1::a01:203 is a NAT64 address'],
    ];
    for (const [url, message] of refusals) {
      const answer = await admin('POST', `/admin/keys/${key.key}/webhooks`, { url });
      expect(answer.status, url).toBe(400);
      expect(answer.json.errors.url, url).toEqual([`${message}; add it to WEBHOOK_ALLOW to allow it`]);
    }
    expect(await h.sql('select id from webhook_endpoints where key_id = $1', [key.id])).toHaveLength(0);

    // Saved before the rule refused it, and the IPv4 inside allowed (WEBHOOK_ALLOW lists 127.0.0.2):
    // the delivery is refused with the same words, and nothing reaches the receiver.
    const hook = await addWebhook(key, receiver.url);
    const compatible = `http://[::127.0.0.2]:${new URL(receiver.url).port}/hook`;
    await updateWebhookEndpoint(h, hook, { url: compatible });
    const before = receiver.received.length;
    expect((await postJson(`${h.url}/api/contact-api/`, { access_key: key.key, email: 'a@example.test', message: 'hi' })).status).toBe(200);
    const failed = await eventually(
      async () => {
        const [row] = await deliveries(key);
        return row?.status === 'failed' ? row : undefined;
      },
      20_000,
      'the refused webhook',
    );
    expect(failed.last_error).toContain('refused: ::7f00:2 is a deprecated IPv4-compatible address');
    expect(failed.last_response_code).toBeNull();
    expect(receiver.received.length).toBe(before);
  });

  it('judges the address again at every delivery: an endpoint saved when the rule allowed it fails with the reason', async () => {
    const other = await startReceiver('127.0.0.3');
    try {
      const key = await h.createKey();
      const hooks = [await addWebhook(key, receiver.url), await addWebhook(key, receiver.url)];
      // As if WEBHOOK_ALLOW had listed these when they were added, and no longer does.
      const port = new URL(receiver.url).port;
      await updateWebhookEndpoint(h, hooks[0]!, { url: other.url });
      await updateWebhookEndpoint(h, hooks[1]!, { url: `http://localhost:${port}/hook` });
      const before = receiver.received.length;
      expect((await postJson(`${h.url}/api/contact-api/`, { access_key: key.key, email: 'a@example.test', message: 'hi' })).status).toBe(200);
      const failed = await eventually(
        async () => {
          const rows = await deliveries(key);
          return rows.length === 2 && rows.every((row) => row.status === 'failed') ? rows : undefined;
        },
        20_000,
        'two refused webhooks',
      );
      const errorsByUrl = Object.fromEntries(failed.map((row) => [row.url, row.last_error]));
      expect(errorsByUrl[other.url]).toMatch(/refused: 127\.0\.0\.3 is a loopback address/);
      expect(errorsByUrl[`http://localhost:${port}/hook`]).toMatch(/refused: localhost is resolved to (127\.0\.0\.1|::1), a loopback address/);
      expect(failed.every((row) => row.last_response_code === null)).toBe(true);
      expect(other.received).toHaveLength(0);
      expect(receiver.received.length).toBe(before);
    } finally {
      await other.close();
    }
  });

  it('refuses a fourth endpoint and a scheme other than http(s)', async () => {
    const key = await h.createKey();
    for (let i = 0; i < 3; i++) await addWebhook(key, `https://hooks.example.com/${i}`);
    const fourth = await admin('POST', `/admin/keys/${key.key}/webhooks`, { url: 'https://hooks.example.com/3' });
    expect(fourth.status).toBe(400);
    expect(fourth.json.errors.url).toEqual(['A key has at most 3 webhooks.']);
    const bad = await admin('POST', `/admin/keys/${(await h.createKey()).key}/webhooks`, { url: 'ftp://example.com/' });
    expect(bad.status).toBe(400);
    expect(bad.json.errors.url[0]).toMatch(/only http:\/\/ and https:\/\//);
  });

  it('disables an endpoint after WEBHOOK_DISABLE_AFTER failed deliveries in a row and emails its owner once', async () => {
    const key = await h.createKey();
    const hook = await addWebhook(key, receiver.url);
    receiver.script.push({ status: 404 }, { status: 404 });
    for (const message of ['one', 'two']) {
      expect((await postJson(`${h.url}/api/contact-api/`, { access_key: key.key, email: 'a@example.test', message })).status).toBe(200);
      await eventually(async () => ((await deliveries(key))[0]?.status === 'failed' ? true : undefined), 20_000, `failure ${message}`);
    }
    const listed = await eventually(
      async () => {
        const [endpoint] = (await admin('GET', `/admin/keys/${key.key}/webhooks`)).json.webhooks;
        return endpoint.enabled === false ? endpoint : undefined;
      },
      20_000,
      'the endpoint disabled',
    );
    expect(listed).toMatchObject({ id: hook.id, consecutive_failures: 2 });
    const notice = await eventually(
      async () => h.sink.messages.find((mail) => mail.envelope.to.includes(key.email) && (mail.parsed.subject ?? '').includes('switched off')),
      20_000,
      'the owner emailed',
    );
    expect(notice.parsed.text).toContain(receiver.url);
    expect(notice.parsed.text).toContain('HTTP 404');

    // Disabled: a new submission makes no delivery for it, and no second email.
    expect((await postJson(`${h.url}/api/contact-api/`, { access_key: key.key, email: 'a@example.test', message: 'three' })).status).toBe(200);
    expect(await deliveries(key)).toHaveLength(2);
    // Enabled again, it delivers and its count starts afresh.
    expect((await admin('PATCH', `/admin/keys/${key.key}/webhooks/${hook.id}`, { enabled: true })).json.webhook).toMatchObject({
      enabled: true,
      consecutive_failures: 0,
    });
    expect((await postJson(`${h.url}/api/contact-api/`, { access_key: key.key, email: 'a@example.test', message: 'four' })).status).toBe(200);
    await eventually(async () => ((await deliveries(key))[0]?.status === 'sent' ? true : undefined), 20_000, 'delivered after enabling');
    const notices = h.sink.messages.filter((mail) => mail.envelope.to.includes(key.email) && (mail.parsed.subject ?? '').includes('switched off'));
    expect(notices).toHaveLength(1);
  });

  it('delivers each of a burst of concurrent submissions once, well before the reconciler would add a missing job', async () => {
    const key = await h.createKey();
    await addWebhook(key, receiver.url);
    const burst = await Promise.all(
      Array.from({ length: 24 }, (_, index) =>
        postJson(`${h.url}/api/contact-api/`, { access_key: key.key, email: 'a@example.test', message: `burst ${index}` }),
      ),
    );
    expect(burst.map((response) => response.status)).toEqual(burst.map(() => 200));
    const ids = burst.map((response) => response.json.submission_id as string).sort();
    // The reconciler looks for rows a minute old (RECONCILE_AFTER_MS above): a delivery whose job was never added waits that long.
    await eventually(
      async () => ((await deliveries(key)).filter((delivery) => delivery.status === 'sent').length === ids.length ? true : undefined),
      20_000,
      'every delivery of the burst sent',
    );
    const posted = receiver.received.map((call) => JSON.parse(call.body).data.id as string).filter((id) => ids.includes(id));
    expect(posted.sort()).toEqual(ids);
  });

  it('delivers the webhook of a submission that asked for no email (not_email_sent)', async () => {
    const key = await h.createKey();
    await addWebhook(key, receiver.url);
    const submitted = await postJson(`${h.url}/api/contact-api/`, { access_key: key.key, email: 'a@example.test', message: 'no email', not_email_sent: true });
    expect(submitted.status).toBe(200);
    expect(submitted.json.email_status).toBe('skipped');
    await eventually(async () => ((await deliveries(key))[0]?.status === 'sent' ? true : undefined), 20_000, 'the webhook delivered');
    expect(receiver.received.some((call) => JSON.parse(call.body).data.id === submitted.json.submission_id)).toBe(true);
    const metrics = await (await fetch(`${h.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).text();
    expect(metrics).toMatch(/cfs_webhook_queue_jobs\{state="waiting"\} \d+/);
  });
});
