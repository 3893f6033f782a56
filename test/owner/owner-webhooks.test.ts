// The owner console's webhooks: added through the form (the secret shown on that answer only),
// deliveries listed with status, attempts, last answer and error, a failed one re-sent, and no
// reach into another owner's key.
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, postJson, startHarness, type Harness } from '../support/harness.ts';
import { signIn } from '../support/owner.ts';
import { startReceiver, type Receiver } from '../support/webhook-receiver.ts';

let h: Harness;
let receiver: Receiver;
beforeAll(async () => {
  h = await startHarness({ env: { WEBHOOK_ALLOW: '127.0.0.5' } });
  receiver = await startReceiver('127.0.0.5');
});
afterAll(async () => {
  await receiver?.close();
  await h?.stop();
});

describe('owner console webhooks', () => {
  it('adds a webhook, shows its secret once, lists deliveries and re-sends a failed one', async () => {
    const key = await h.createKey({ email: 'hooks-owner@example.test' });
    const owner = await signIn(h, key.email);
    const keys = await owner.get('/owner/keys');
    expect(keys.text).toContain(`/owner/keys/${key.id}/webhooks`);

    const added = await owner.post(`/owner/keys/${key.id}/webhooks`, { url: receiver.url });
    expect(added.status).toBe(200);
    expect(added.headers['cache-control']).toBe('no-store');
    const secret = /data-secret>(whsec_[^<]+)</.exec(added.text)?.[1];
    expect(secret).toBeTruthy();
    const shown = await owner.get(`/owner/keys/${key.id}/webhooks`);
    expect(shown.text).toContain(receiver.url);
    expect(shown.text).not.toContain(secret!);
    expect(shown.text).not.toContain('Signing secret'); // no empty secret section on later views

    receiver.script.push({ status: 400 });
    const submitted = await postJson(`${h.url}/api/contact-api/`, { access_key: key.key, email: 'a@example.test', message: 'to the console' });
    expect(submitted.status).toBe(200);
    const failedPage = await eventually(
      async () => {
        const listed = await owner.get(`/owner/keys/${key.id}/webhooks`);
        return listed.text.includes('data-status="failed"') ? listed.text : undefined;
      },
      20_000,
      'a failed delivery listed',
    );
    expect(failedPage).toContain('HTTP 400');
    const deliveryId = /data-delivery="([0-9a-f-]{36})"/.exec(failedPage)![1]!;

    const resent = await owner.post(`/owner/keys/${key.id}/webhook-deliveries/${deliveryId}/resend`);
    expect(resent.status).toBe(303);
    await eventually(
      async () => ((await owner.get(`/owner/keys/${key.id}/webhooks`)).text.includes('data-status="sent"') ? true : undefined),
      20_000,
      'the re-sent delivery',
    );
    const last = receiver.received.at(-1)!;
    const payload = new Webhook(secret!).verify(last.body, {
      'webhook-id': String(last.headers['webhook-id']),
      'webhook-timestamp': String(last.headers['webhook-timestamp']),
      'webhook-signature': String(last.headers['webhook-signature']),
    }) as any;
    expect(payload.data.message).toBe('to the console');

    // Another owner reaches none of it.
    const stranger = await signIn(h, (await h.createKey({ email: 'stranger@example.test' })).email);
    expect((await stranger.get(`/owner/keys/${key.id}/webhooks`)).status).toBe(404);
    expect((await stranger.post(`/owner/keys/${key.id}/webhooks`, { url: 'https://evil.example/' })).status).toBe(404);
    expect((await stranger.post(`/owner/keys/${key.id}/webhook-deliveries/${deliveryId}/resend`)).status).toBe(404);
  });

  it('refuses a bad URL with the reason on the page, and a write without the CSRF token', async () => {
    const key = await h.createKey({ email: 'hooks-owner2@example.test' });
    const owner = await signIn(h, key.email);
    const bad = await owner.post(`/owner/keys/${key.id}/webhooks`, { url: 'javascript:alert(1)' });
    expect(bad.status).toBe(400);
    expect(bad.text).toContain('only http:// and https:// are supported');
    const loopback = await owner.post(`/owner/keys/${key.id}/webhooks`, { url: 'http://127.0.0.1:3100/' });
    expect(loopback.status).toBe(400);
    expect(loopback.text).toContain('refused: 127.0.0.1 is a loopback address; add it to WEBHOOK_ALLOW to allow it');
    const forged = await owner.post(`/owner/keys/${key.id}/webhooks`, { url: receiver.url, csrf_token: 'nope' });
    expect(forged.status).toBe(403);
    expect(await h.sql('select id from webhook_endpoints where key_id = $1', [key.id])).toHaveLength(0);
  });
});

describe("a message's page: each chat and webhook outcome", () => {
  it('shows a delivered webhook and a failed one, with where each went, its status, attempts and last answer, and the JSON has them', async () => {
    const key = await h.createKey({ email: 'outcomes-owner@example.test' });
    const owner = await signIn(h, key.email);
    const refusing = await startReceiver('127.0.0.5');
    try {
      // A 400 fails at once: no retry to wait for.
      refusing.script.push({ status: 400 });
      for (const url of [receiver.url, refusing.url]) expect((await owner.post(`/owner/keys/${key.id}/webhooks`, { url })).status).toBe(200);
      const submitted = await postJson(`${h.url}/api/contact-api/`, { access_key: key.key, email: 'b@example.test', message: 'two endpoints' });
      const id = submitted.json.submission_id as string;
      // The page's section on chat and webhooks, once both deliveries are settled.
      const section = await eventually(
        async () => {
          const { text } = await owner.get(`/owner/submissions/${id}`);
          const shown = text.slice(text.indexOf('Chat and webhooks'), text.indexOf('<h2>Fields</h2>'));
          return shown.includes('data-status="sent"') && shown.includes('data-status="failed"') ? shown : undefined;
        },
        20_000,
        'both outcomes on the page',
      );
      const item = (host: string) => section.split('<li').find((entry) => entry.includes(host)) ?? '';
      const [good, bad] = [new URL(receiver.url).host, new URL(refusing.url).host];
      expect(item(good)).toContain('data-status="sent"');
      expect(item(good)).toContain('Webhook');
      expect(item(good)).toContain('>delivered<');
      expect(item(good)).toContain('1 attempt, last answer HTTP 200');
      expect(item(bad)).toContain('data-status="failed"');
      expect(item(bad)).toContain('1 attempt, last answer HTTP 400');
      // The path of a webhook's URL is not shown, only its host.
      expect(section).not.toContain('/hook');

      const json = JSON.parse((await owner.api('GET', `/submissions/${id}`)).text);
      expect(json.webhooks).toHaveLength(2);
      expect(Object.fromEntries(json.webhooks.map((w: any) => [w.host, [w.platform, w.status, w.attempts, w.last_response_code]]))).toEqual({
        [good]: ['Webhook', 'sent', 1, 200],
        [bad]: ['Webhook', 'failed', 1, 400],
      });
    } finally {
      await refusing.close();
    }
  });
});

describe('owner JSON API webhooks', () => {
  const submit = (key: { key: string }, message: string) => postJson(`${h.url}/api/contact-api/`, { access_key: key.key, email: 'a@example.test', message });
  /** A key of `email` with an owner signed in, one endpoint, and one delivery to it that failed (a 400). */
  async function keyWithFailedDelivery(email: string) {
    const key = await h.createKey({ email });
    const owner = await signIn(h, key.email);
    const endpointId: string = (await owner.api('POST', `/keys/${key.id}/webhooks`, { url: receiver.url })).json.webhook.id;
    receiver.script.push({ status: 400 });
    expect((await submit(key, 'to fail')).status).toBe(200);
    const [failed] = await eventually(
      async () => {
        const rows = await h.sql<{ id: string }>('select id from webhook_deliveries where endpoint_id = $1 and email_status = $2', [endpointId, 'failed']);
        return rows.length ? rows : undefined;
      },
      20_000,
      'a failed delivery',
    );
    return { key, owner, endpointId, failed: failed! };
  }
  const deliveriesOf = async (keyId: string) =>
    (await h.sql('select d.id from webhook_deliveries d join webhook_endpoints e on e.id = d.endpoint_id where e.key_id = $1', [keyId])).length;

  it('adds an endpoint (secret answered once), lists deliveries, re-sends a failed one, disables and deletes', async () => {
    const key = await h.createKey({ email: 'api-hooks@example.test' });
    const owner = await signIn(h, key.email);
    expect((await submit(key, 'before any webhook')).status).toBe(200); // the key is cached now, without endpoints

    const added = await owner.api('POST', `/keys/${key.id}/webhooks`, { url: receiver.url });
    expect(added.status).toBe(201);
    expect(added.headers['cache-control']).toBe('no-store');
    const secret: string = added.json.secret;
    expect(secret).toMatch(/^whsec_/);
    expect(added.json.webhook).toMatchObject({ url: receiver.url, enabled: true, consecutive_failures: 0 });
    const endpointId: string = added.json.webhook.id;
    const listed = await owner.api('GET', `/keys/${key.id}/webhooks`);
    expect(listed.status).toBe(200);
    expect(listed.json.webhooks).toEqual([added.json.webhook]);
    expect(listed.text).not.toContain(secret);

    // The new endpoint applies at once (the cached key was forgotten); a 400 fails the delivery.
    receiver.script.push({ status: 400 });
    expect((await submit(key, 'through the api')).status).toBe(200);
    const failed = await eventually(
      async () => {
        const deliveries = (await owner.api('GET', `/keys/${key.id}/webhook-deliveries`)).json.deliveries;
        return deliveries?.[0]?.status === 'failed' ? deliveries[0] : undefined;
      },
      20_000,
      'a failed delivery',
    );
    expect(failed).toMatchObject({ endpoint_id: endpointId, url: receiver.url, attempts: 1, last_response_code: 400 });

    const resent = await owner.api('POST', `/keys/${key.id}/webhook-deliveries/${failed.delivery_id}/resend`);
    expect(resent.status).toBe(202);
    expect(resent.json).toEqual({ success: true, delivery_id: failed.delivery_id, status: 'queued' });
    await eventually(
      async () => {
        const deliveries = (await owner.api('GET', `/keys/${key.id}/webhook-deliveries?submission=${failed.submission_id}`)).json.deliveries;
        return deliveries?.[0]?.status === 'sent' ? true : undefined;
      },
      20_000,
      'the re-sent delivery',
    );
    const last = receiver.received.at(-1)!;
    const payload = new Webhook(secret).verify(last.body, {
      'webhook-id': String(last.headers['webhook-id']),
      'webhook-timestamp': String(last.headers['webhook-timestamp']),
      'webhook-signature': String(last.headers['webhook-signature']),
    }) as any;
    expect(payload.data.message).toBe('through the api');
    // Only a failed delivery can be re-sent.
    expect((await owner.api('POST', `/keys/${key.id}/webhook-deliveries/${failed.delivery_id}/resend`)).status).toBe(404);

    const disabled = await owner.api('PATCH', `/keys/${key.id}/webhooks/${endpointId}`, { enabled: false });
    expect(disabled.status).toBe(200);
    expect(disabled.json.webhook).toMatchObject({ id: endpointId, enabled: false });
    const before = await deliveriesOf(key.id);
    expect((await submit(key, 'while disabled')).status).toBe(200);
    expect(await deliveriesOf(key.id)).toBe(before);
    expect((await owner.api('PATCH', `/keys/${key.id}/webhooks/${endpointId}`, { enabled: 'yes' })).status).toBe(400);

    expect((await owner.api('DELETE', `/keys/${key.id}/webhooks/${endpointId}`)).status).toBe(204);
    expect((await owner.api('GET', `/keys/${key.id}/webhooks`)).json.webhooks).toEqual([]);
    expect((await owner.api('DELETE', `/keys/${key.id}/webhooks/${endpointId}`)).status).toBe(404);
  });

  it('refuses a bad URL and the fourth endpoint with a form-style error', async () => {
    const key = await h.createKey({ email: 'api-hooks-bad@example.test' });
    const owner = await signIn(h, key.email);
    const bad = await owner.api('POST', `/keys/${key.id}/webhooks`, { url: 'javascript:alert(1)' });
    expect(bad.status).toBe(400);
    expect(bad.json).toMatchObject({ success: false, errors: { url: [expect.stringContaining('only http:// and https:// are supported')] } });
    const ipv6Loopback = await owner.api('POST', `/keys/${key.id}/webhooks`, { url: 'http://[::1]/hook' });
    expect(ipv6Loopback.status).toBe(400);
    expect(ipv6Loopback.json.errors.url).toEqual(['refused: ::1 is a loopback address; add it to WEBHOOK_ALLOW to allow it']);
    expect(await h.sql('select id from webhook_endpoints where key_id = $1', [key.id])).toHaveLength(0);
    for (let i = 0; i < 3; i++) expect((await owner.api('POST', `/keys/${key.id}/webhooks`, { url: `${receiver.url}?n=${i}` })).status).toBe(201);
    const fourth = await owner.api('POST', `/keys/${key.id}/webhooks`, { url: receiver.url });
    expect(fourth.status).toBe(400);
    expect(fourth.json.errors.url).toEqual(['A key has at most 3 webhooks.']);
  });

  it('requires the CSRF header on every write', async () => {
    const { key, owner, endpointId, failed } = await keyWithFailedDelivery('api-hooks-csrf@example.test');
    for (const csrf of ['', 'x'.repeat(43)]) {
      const header = { 'x-csrf-token': csrf };
      expect((await owner.api('POST', `/keys/${key.id}/webhooks`, { url: receiver.url }, header)).status).toBe(403);
      expect((await owner.api('PATCH', `/keys/${key.id}/webhooks/${endpointId}`, { enabled: false }, header)).status).toBe(403);
      expect((await owner.api('DELETE', `/keys/${key.id}/webhooks/${endpointId}`, undefined, header)).status).toBe(403);
      expect((await owner.api('POST', `/keys/${key.id}/webhook-deliveries/${failed.id}/resend`, undefined, header)).status).toBe(403);
    }
    expect(await h.sql('select url, enabled from webhook_endpoints where key_id = $1', [key.id])).toEqual([{ url: receiver.url, enabled: true }]);
    expect(await h.sql('select email_status from webhook_deliveries where id = $1', [failed.id])).toEqual([{ email_status: 'failed' }]);
  });

  it("answers 404 to another owner for every route of a key's webhooks", async () => {
    const { key, endpointId, failed } = await keyWithFailedDelivery('api-hooks-victim@example.test');

    const strangerKey = await h.createKey({ email: 'api-hooks-stranger@example.test' });
    const stranger = await signIn(h, strangerKey.email);
    const attempts = [
      () => stranger.api('GET', `/keys/${key.id}/webhooks`),
      () => stranger.api('POST', `/keys/${key.id}/webhooks`, { url: 'https://evil.example/' }),
      () => stranger.api('PATCH', `/keys/${key.id}/webhooks/${endpointId}`, { enabled: false }),
      () => stranger.api('DELETE', `/keys/${key.id}/webhooks/${endpointId}`),
      () => stranger.api('GET', `/keys/${key.id}/webhook-deliveries`),
      () => stranger.api('POST', `/keys/${key.id}/webhook-deliveries/${failed.id}/resend`),
      // Their own key with the victim's row ids: not found either.
      () => stranger.api('PATCH', `/keys/${strangerKey.id}/webhooks/${endpointId}`, { enabled: false }),
      () => stranger.api('DELETE', `/keys/${strangerKey.id}/webhooks/${endpointId}`),
      () => stranger.api('POST', `/keys/${strangerKey.id}/webhook-deliveries/${failed.id}/resend`),
    ];
    for (const attempt of attempts) {
      const answer = await attempt();
      expect(answer.status).toBe(404);
      expect(answer.text).not.toContain(receiver.url);
    }
    expect((await stranger.api('GET', `/keys/${strangerKey.id}/webhook-deliveries`)).json.deliveries).toEqual([]);
    expect(await h.sql('select url, enabled from webhook_endpoints where key_id = $1', [key.id])).toEqual([{ url: receiver.url, enabled: true }]);
    expect(await h.sql('select email_status from webhook_deliveries where id = $1', [failed.id])).toEqual([{ email_status: 'failed' }]);
  });
});
