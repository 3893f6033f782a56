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

    receiver.script.push({ status: 400 });
    const submitted = await postJson(`${h.url}/api/contact-api/`, { access_key: key.key, email: 'a@example.test', message: 'to the console' });
    expect(submitted.status).toBe(200);
    const failedPage = await eventually(async () => {
      const listed = await owner.get(`/owner/keys/${key.id}/webhooks`);
      return listed.text.includes('data-status="failed"') ? listed.text : undefined;
    }, 20_000, 'a failed delivery listed');
    expect(failedPage).toContain('HTTP 400');
    const deliveryId = /data-delivery="([0-9a-f-]{36})"/.exec(failedPage)![1]!;

    const resent = await owner.post(`/owner/keys/${key.id}/webhook-deliveries/${deliveryId}/resend`);
    expect(resent.status).toBe(303);
    await eventually(async () => ((await owner.get(`/owner/keys/${key.id}/webhooks`)).text.includes('data-status="sent"') ? true : undefined), 20_000, 'the re-sent delivery');
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
    const forged = await owner.post(`/owner/keys/${key.id}/webhooks`, { url: receiver.url, csrf_token: 'nope' });
    expect(forged.status).toBe(403);
    expect(await h.sql('select id from webhook_endpoints where key_id = $1', [key.id])).toHaveLength(0);
  });
});
