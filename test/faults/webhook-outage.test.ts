// Nothing lost for webhooks either: the receiver is down (deliveries retry), then Redis restarts
// empty (every job is lost) while submissions keep arriving; once both are back, the reconciler
// enqueues the webhook rows again (and the emails, whose claims write the deliveries not yet
// written) and every submission reaches the receiver once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis } from '../../src/local/services.ts';
import { eventually, postJson, startHarness, type Harness } from '../support/harness.ts';
import { startReceiver, type Receiver } from '../support/webhook-receiver.ts';

const HOST = '127.0.0.4';
const TOKEN = 'test-admin-token-0123456789';
let redis: Awaited<ReturnType<typeof startRedis>>;
let h: Harness;
let receiver: Receiver | undefined;

beforeAll(async () => {
  redis = await startRedis();
  h = await startHarness({
    env: {
      REDIS_URL: redis.url,
      ADMIN_TOKEN: TOKEN,
      RECONCILE_INTERVAL_MS: '500',
      RECONCILE_AFTER_MS: '500',
      WEBHOOK_ALLOW: HOST,
      WEBHOOK_RETRY_BACKOFF_MS: '100',
      WEBHOOK_RETRY_MAX_BACKOFF_MS: '300',
    },
  });
});
afterAll(async () => {
  await receiver?.close();
  await h?.stop();
  await redis?.stop();
});

describe('a webhook receiver down, then Redis restarted empty', () => {
  it('delivers every submission once both are back', async () => {
    // Learn a free port, then leave it closed: the receiver is down.
    const probe = await startReceiver(HOST);
    const url = probe.url;
    await probe.close();
    const key = await h.createKey();
    const created = await fetch(`${h.url}/admin/keys/${key.key}/webhooks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url }),
    });
    expect(created.status).toBe(201);
    const submit = (message: string) => postJson(`${h.url}/api/contact-api/`, { access_key: key.key, email: 'a@example.org', message });

    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await submit(`receiver down ${i}`)).json.submission_id);
    await eventually(
      async () => {
        const rows = await h.sql<{ n: number }>(`select count(*)::int as n from webhook_deliveries where email_status = 'retrying'`);
        return rows[0]!.n > 0 ? true : undefined;
      },
      20_000,
      'deliveries retrying',
    );

    await redis.stop();
    for (let i = 0; i < 5; i++) {
      const response = await submit(`redis down ${i}`);
      expect([200, 503]).toContain(response.status);
      if (response.status === 200) ids.push(response.json.submission_id);
    }
    redis = await startRedis({ port: redis.port });
    receiver = await startReceiver(HOST, Number(new URL(url).port));

    // A submission answered while Redis was down has its delivery written once its email's job,
    // added again by the reconciler, is claimed: so count the rows sent, not the rows left unsent.
    await eventually(
      async () => {
        const rows = await h.sql<{ n: number }>(`select count(*)::int as n from webhook_deliveries where email_status = 'sent'`);
        return rows[0]!.n >= ids.length ? true : undefined;
      },
      40_000,
      'every webhook delivered',
    );
    const received = new Set(receiver.received.map((call) => JSON.parse(call.body).data.id));
    for (const id of ids) expect(received.has(id), id).toBe(true);
    const rows = await h.sql<{ n: number }>('select count(*)::int as n from webhook_deliveries');
    expect(rows[0]!.n).toBe(ids.length);
  });
});
