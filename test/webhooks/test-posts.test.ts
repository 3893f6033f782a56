// "Send a test post" on the owner console's webhooks page: a sample message marked as a test, sent
// at once to that one webhook or chat channel, the outcome on the page that answers; bounded per key
// an hour; stored and counted nowhere; and no reach into another owner's key.
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../support/harness.ts';
import { signIn, type OwnerClient } from '../support/owner.ts';
import { startReceiver, type Receiver } from '../support/webhook-receiver.ts';
import { startChatStandIn, type ChatStandIn } from '../support/chat-stand-ins.ts';

const HOST = '127.0.0.5';

let h: Harness;
let receiver: Receiver;
let slack: ChatStandIn;
beforeAll(async () => {
  receiver = await startReceiver(HOST);
  slack = await startChatStandIn('slack', HOST);
  h = await startHarness({ env: { WEBHOOK_ALLOW: HOST } });
  slack.publicUrl = h.config.PUBLIC_URL;
});
afterAll(async () => {
  await receiver?.close();
  await slack?.close();
  await h?.stop();
});

/** Adds the webhook; answers its id and signing secret. */
async function addWebhook(owner: OwnerClient, keyId: string, url: string): Promise<{ id: string; secret: string }> {
  const added = await owner.post(`/owner/keys/${keyId}/webhooks`, { url });
  expect(added.status).toBe(200);
  const [endpoint] = await h.sql<{ id: string }>('select id from webhook_endpoints where key_id = $1 and url = $2', [keyId, url]);
  return { id: endpoint!.id, secret: /data-secret>(whsec_[^<]+)</.exec(added.text)![1]! };
}

describe('a test post from the owner console', () => {
  it('posts a signed sample marked as a test to that webhook only, shows it delivered, and stores nothing', async () => {
    const key = await h.createKey({ email: 'test-post-owner@example.test' });
    const owner = await signIn(h, key.email);
    const other = await startReceiver(HOST);
    try {
      const webhook = await addWebhook(owner, key.id, receiver.url);
      await addWebhook(owner, key.id, other.url);
      const page = await owner.get(`/owner/keys/${key.id}/webhooks`);
      expect(page.text).toContain(`action="/owner/keys/${key.id}/webhooks/${webhook.id}/test"`);
      expect(page.text).toContain('Send a test post');
      const before = receiver.received.length;

      const sent = await owner.post(`/owner/keys/${key.id}/webhooks/${webhook.id}/test`);
      expect(sent.status).toBe(200);
      expect(sent.text).toContain(`Test post to the webhook ${receiver.url} delivered: HTTP 200.`);
      expect(receiver.received.length).toBe(before + 1);
      expect(other.received).toHaveLength(0);
      const last = receiver.received.at(-1)!;
      const payload = new Webhook(webhook.secret).verify(last.body, {
        'webhook-id': String(last.headers['webhook-id']),
        'webhook-timestamp': String(last.headers['webhook-timestamp']),
        'webhook-signature': String(last.headers['webhook-signature']),
      }) as any;
      expect(payload.type).toBe('submission.created');
      expect(payload.data.test).toBe(true);
      expect(payload.data.email).toBe('sample.sender@example.com');
      expect(payload.data.fields).toEqual([{ name: 'name', value: 'Sample Sender' }]);

      expect(await h.sql('select id from submissions where key_id = $1', [key.id])).toHaveLength(0);
      expect(await h.sql('select d.id from webhook_deliveries d join webhook_endpoints e on e.id = d.endpoint_id where e.key_id = $1', [key.id])).toHaveLength(
        0,
      );
    } finally {
      await other.close();
    }
  });

  it("shows a failed test post with the receiver's status, and leaves the endpoint's failures alone", async () => {
    const key = await h.createKey({ email: 'test-post-failing@example.test' });
    const owner = await signIn(h, key.email);
    const webhook = await addWebhook(owner, key.id, receiver.url);
    receiver.script.push({ status: 500 });
    const sent = await owner.post(`/owner/keys/${key.id}/webhooks/${webhook.id}/test`);
    expect(sent.status).toBe(200);
    expect(sent.text).toContain(`Test post to the webhook ${receiver.url} failed: HTTP 500: receiver says no`);
    const [endpoint] = await h.sql<{ consecutive_failures: number; enabled: boolean }>(
      'select consecutive_failures, enabled from webhook_endpoints where id = $1',
      [webhook.id],
    );
    expect(endpoint).toEqual({ consecutive_failures: 0, enabled: true });
  });

  it('posts to a Slack channel in its format, marked as a test', async () => {
    const key = await h.createKey({ email: 'test-post-slack@example.test' });
    const owner = await signIn(h, key.email);
    expect((await owner.post(`/owner/keys/${key.id}/webhooks`, { kind: 'slack', url: slack.url })).status).toBe(200);
    const [channel] = await h.sql<{ id: string }>("select id from webhook_endpoints where key_id = $1 and kind = 'slack'", [key.id]);
    const before = slack.calls.length;
    const sent = await owner.post(`/owner/keys/${key.id}/webhooks/${channel!.id}/test`);
    expect(sent.status).toBe(200);
    expect(sent.text).toMatch(/Test post to the Slack channel [^<]+ delivered: HTTP 200\./);
    expect(slack.calls.length).toBe(before + 1);
    const call = slack.calls.at(-1)!;
    expect(call.problems).toEqual([]);
    expect(JSON.stringify(call.body)).toContain('Test message');
    expect(sent.text).not.toContain(slack.secret);
  });

  it('refuses the eleventh test post of a key within the hour, with when the next can go', async () => {
    const key = await h.createKey({ email: 'test-post-bounded@example.test' });
    const owner = await signIn(h, key.email);
    const webhook = await addWebhook(owner, key.id, receiver.url);
    for (let sent = 0; sent < 10; sent += 1) expect((await owner.post(`/owner/keys/${key.id}/webhooks/${webhook.id}/test`)).status).toBe(200);
    const before = receiver.received.length;
    const refused = await owner.post(`/owner/keys/${key.id}/webhooks/${webhook.id}/test`);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect(refused.text).toMatch(/A key sends at most 10 test posts an hour: the next can go in \d+ minutes\./);
    expect(receiver.received.length).toBe(before);
  });

  it("cannot test-post another owner's endpoint, nor without the CSRF token", async () => {
    const key = await h.createKey({ email: 'test-post-victim@example.test' });
    const owner = await signIn(h, key.email);
    const webhook = await addWebhook(owner, key.id, receiver.url);
    const strangersKey = await h.createKey({ email: 'test-post-stranger@example.test' });
    const stranger = await signIn(h, strangersKey.email);
    const before = receiver.received.length;
    expect((await stranger.post(`/owner/keys/${key.id}/webhooks/${webhook.id}/test`)).status).toBe(404);
    // Its own key in the path, the other key's endpoint: not found either.
    expect((await stranger.post(`/owner/keys/${strangersKey.id}/webhooks/${webhook.id}/test`)).status).toBe(404);
    expect((await owner.post(`/owner/keys/${key.id}/webhooks/${webhook.id}/test`, { csrf_token: 'nope' })).status).toBe(403);
    expect(receiver.received.length).toBe(before);
  });

  it("is in the owner API too: the outcome as JSON, another owner's endpoint not found", async () => {
    const key = await h.createKey({ email: 'test-post-api@example.test' });
    const owner = await signIn(h, key.email);
    const webhook = await addWebhook(owner, key.id, receiver.url);
    const before = receiver.received.length;
    const sent = await owner.api('POST', `/keys/${key.id}/webhooks/${webhook.id}/test`);
    expect(sent.status).toBe(200);
    expect(sent.json).toEqual({ delivered: true, detail: 'HTTP 200' });
    expect(receiver.received.length).toBe(before + 1);
    expect(JSON.parse(receiver.received.at(-1)!.body).data.test).toBe(true);
    receiver.script.push({ status: 400 });
    expect((await owner.api('POST', `/keys/${key.id}/webhooks/${webhook.id}/test`)).json).toEqual({ delivered: false, detail: 'HTTP 400: receiver says no' });
    const stranger = await signIn(h, (await h.createKey({ email: 'test-post-api-stranger@example.test' })).email);
    expect((await stranger.api('POST', `/keys/${key.id}/webhooks/${webhook.id}/test`)).status).toBe(404);
    expect(receiver.received.length).toBe(before + 2);
  });
});
