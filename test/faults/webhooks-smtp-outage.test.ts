// Webhooks and chat channels do not wait for the SMTP relay. The relay refuses every message (its
// circuit breaker open, the next probe minutes away) when Redis stops: the submissions answered 200
// meanwhile have no job at all, neither for their email nor for their webhooks (whose rows the API
// wrote with them). Once Redis is back with its data (the breaker still open), their webhook and
// chat deliveries are POSTed with the shipped reconciler figures, while every email still waits for
// the relay. Each is written once, under the id its submission and endpoint fix, and sent once.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis } from '../../src/local/services.ts';
import { createdEventId } from '../../src/shared/webhooks/created-event-id.ts';
import { startChatStandIn, type ChatStandIn } from '../support/chat-stand-ins.ts';
import { adminRequest, submitJson } from '../support/client.ts';
import { eventually, startHarness, type Harness } from '../support/harness.ts';
import { startReceiver, type Receiver } from '../support/webhook-receiver.ts';

const HOST = '127.0.0.6';
const TOKEN = 'test-admin-token-0123456789';
/** docs/webhooks.md promises 20 s after Redis returns; twice that, for a busy machine. */
const BOUND_MS = 40_000;

let dir: string;
let redis: Awaited<ReturnType<typeof startRedis>>;
let h: Harness;
let receiver: Receiver;
let slack: ChatStandIn;

beforeAll(async () => {
  // Redis keeps its data across the restart (append-only file): the breaker stays open, as when
  // Redis is unreachable for a few seconds rather than wiped.
  dir = await mkdtemp(path.join(tmpdir(), 'cfs-redis-'));
  redis = await startRedis({ dir });
  receiver = await startReceiver(HOST);
  slack = await startChatStandIn('slack', HOST);
  h = await startHarness({
    env: {
      REDIS_URL: redis.url,
      ADMIN_TOKEN: TOKEN,
      WEBHOOK_ALLOW: HOST,
      SMTP_BREAKER_THRESHOLD: '2',
      // No probe during the test: the relay stays out of reach for every email.
      SMTP_PROBE_INTERVAL_MS: String(10 * 60_000),
    },
  });
  slack.publicUrl = h.config.PUBLIC_URL;
});
afterAll(async () => {
  await h?.stop();
  await receiver?.close();
  await slack?.close();
  await redis?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const admin = (method: string, route: string, body?: unknown) => adminRequest(h, TOKEN, method, route, body);
const breaker = async () => ((await (await fetch(`${h.url}/readyz`)).json()) as { delivery: { smtp: { breaker: string } } }).delivery.smtp.breaker;
const webhookPosts = (id: string) => receiver.received.filter((call) => JSON.parse(call.body).data.id === id);
const slackPosts = (id: string) => slack.calls.filter((call) => JSON.stringify(call.body).includes(`/owner/submissions/${id}`));
const deliveredToBoth = (ids: string[]) => ids.every((id) => webhookPosts(id).length > 0 && slackPosts(id).length > 0);

describe('an SMTP relay refusing everything while Redis is briefly down', () => {
  it('posts the webhook and chat message of each submission the API could not queue soon after Redis returns, while the emails wait', async () => {
    h.sink.behave(() => ({ code: 451, message: 'Try again later' }));
    const key = await h.createKey();
    const webhook = await admin('POST', `/admin/keys/${key.key}/webhooks`, { url: receiver.url });
    expect(webhook.status, webhook.text).toBe(201);
    const channel = await admin('POST', `/admin/keys/${key.key}/webhooks`, { kind: 'slack', url: slack.url });
    expect(channel.status, channel.text).toBe(201);
    const endpointIds = [webhook.json.webhook.id as string, channel.json.webhook.id as string];
    const submit = (message: string) => submitJson(h, { access_key: key.key, email: 'visitor@example.org', message });

    // Refused emails open the breaker; the webhooks of these submissions go out meanwhile.
    const before: string[] = [];
    for (let i = 0; i < 3; i++) {
      const answer = await submit(`before ${i}`);
      expect(answer.status).toBe(200);
      before.push(answer.json.submission_id);
    }
    await eventually(async () => ((await breaker()) === 'open' ? true : undefined), 20_000, 'the SMTP breaker to open');
    await eventually(async () => (deliveredToBoth(before) ? true : undefined), 20_000, 'the webhooks of the submissions before the outage');

    await redis.stop();
    const during: string[] = [];
    for (let i = 0; i < 5; i++) {
      const answer = await submit(`while Redis is down ${i}`);
      expect([200, 503]).toContain(answer.status);
      if (answer.status === 200) during.push(answer.json.submission_id);
    }
    expect(during.length).toBeGreaterThan(0);
    // Their deliveries were written with them, and no job could be added: none has been sent.
    const written = await h.sql<{ email_status: string }>('select email_status from webhook_deliveries where submission_id = any($1)', [during]);
    expect(written.map((row) => row.email_status)).toEqual(during.flatMap(() => ['queued', 'queued']));
    redis = await startRedis({ port: redis.port, dir });
    const back = Date.now();

    await eventually(
      async () => (deliveredToBoth(during) ? true : undefined),
      BOUND_MS,
      'the webhook and chat deliveries of the submissions saved while Redis was down',
    );
    console.info(`webhook and chat deliveries of ${during.length} submissions posted ${((Date.now() - back) / 1000).toFixed(1)} s after Redis returned`);

    // The relay still refuses: no email of theirs has gone, the breaker is open.
    expect(await breaker()).toBe('open');
    const emails = await h.sql<{ email_status: string }>('select email_status from submissions where id = any($1)', [during]);
    expect(emails.map((row) => row.email_status)).toEqual(during.map(() => 'queued'));
    // One delivery per submission and endpoint, under the id they fix, each posted once.
    const deliveries = (id: string) =>
      h.sql<{ id: string; email_status: string }>('select id, email_status from webhook_deliveries where submission_id = $1', [id]);
    for (const id of during) {
      // Recorded `sent` just after the receiver answered.
      const rows = await eventually(async () => {
        const found = await deliveries(id);
        return found.every((row) => row.email_status === 'sent') ? found : undefined;
      });
      expect(rows.map((row) => row.id).sort()).toEqual(endpointIds.map((endpointId) => createdEventId(id, endpointId)).sort());
      expect(webhookPosts(id)).toHaveLength(1);
      expect(slackPosts(id)).toHaveLength(1);
    }
  });
});
