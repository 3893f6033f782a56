// The queue dashboard at /admin/queues: behind the admin token, shows the queue, retries a failed job.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startHarness, type Harness } from '../support/harness.ts';
import { keyStatusOf } from '../support/rows.ts';
import { submitJson } from '../support/client.ts';
import { form, request } from '../support/http.ts';

const TOKEN = 'queue-board-admin-token-0123';
const basic = (password: string) => `Basic ${Buffer.from(`admin:${password}`).toString('base64')}`;
let h: Harness;
beforeAll(async () => {
  h = await startHarness({ env: { ADMIN_TOKEN: TOKEN } });
});
afterAll(() => h?.stop());

const board = (path: string, init: { method?: string; headers?: Record<string, string> } = {}, auth = basic(TOKEN)) =>
  fetch(`${h.url}/admin/queues${path}`, { ...init, headers: { authorization: auth, ...init.headers } });
const statusOf = async (id: string) => (await h.sql<any>('select email_status, email_attempts from submissions where id = $1', [id]))[0];

describe('queue dashboard', () => {
  it('asks a browser for the token and refuses a wrong one', async () => {
    const anonymous = await fetch(`${h.url}/admin/queues`);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toContain('Basic');
    expect((await board('', {}, basic('wrong-token-0123456789'))).status).toBe(401);
    const page = await board('');
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<html');
  });

  it('shows the delivery queue and retries a failed job, which then delivers', async () => {
    const key = await h.createKey();
    h.sink.behave(() => ({ code: 550, message: 'No such user' }));
    const id = (await submitJson(h, { access_key: key.key, email: 'a@example.org', message: 'retry me by hand' })).json.submission_id;
    await eventually(async () => ((await statusOf(id)).email_status === 'failed' ? true : undefined));
    h.sink.behave(undefined);

    // The row is `failed` before BullMQ moves its job to the failed set: wait for the dashboard to show it.
    const deliveries = await eventually(async () => {
      const queues = (await (await board('/api/queues?activeQueue=deliveries&status=failed')).json()) as any;
      const queue = queues.queues.find((entry: any) => entry.name === 'deliveries');
      return queue?.counts.failed >= 1 ? queue : undefined;
    });
    expect(deliveries.counts.failed).toBeGreaterThanOrEqual(1);
    expect(deliveries.jobs.map((job: any) => job.id)).toContain(id);

    // As the dashboard's own page sends it: same origin.
    const retried = await board(`/api/queues/deliveries/${id}/retry`, { method: 'PUT', headers: { origin: h.url, 'sec-fetch-site': 'same-origin' } });
    expect(retried.status).toBe(204);
    const row = await eventually(async () => {
      const current = await statusOf(id);
      return current.email_status === 'sent' ? current : undefined;
    });
    // A retried failed row is a fresh delivery: its attempts count from the retry.
    expect(row.email_attempts).toBe(1);
    expect(h.sink.messages.some((mail) => mail.parsed.messageId === `<submission-${id}@example.test>`)).toBe(true);
  });

  it('refuses cross-site requests that carry cached credentials, on every /admin route', async () => {
    const host = new URL(h.url).host;
    const crossSite: Array<Record<string, string>> = [
      { origin: 'https://evil.test' },
      { origin: 'null' },
      { origin: `http://${host}.evil.test` },
      { 'sec-fetch-site': 'cross-site', origin: 'https://evil.test' },
      { 'sec-fetch-site': 'same-site' },
    ];
    for (const headers of crossSite) {
      // A form another site posts: urlencoded, no custom header, the browser adds the Basic credentials.
      const added = await request(`${h.url}/admin/queues/api/queues/deliveries/add`, {
        method: 'POST',
        headers: { authorization: basic(TOKEN), 'content-type': 'application/x-www-form-urlencoded', ...headers },
        body: form([
          ['name', 'forged'],
          ['data', '{}'],
        ]),
      });
      expect(added.status).toBe(403);
      expect(added.json).toMatchObject({ success: false, message: 'Cross-site requests to /admin are refused.' });
    }
    const key = await h.createKey();
    const patch = (headers: Record<string, string>) =>
      request(`${h.url}/admin/keys/${key.key}`, {
        method: 'PATCH',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ status: 'disabled' }),
      });
    expect((await patch({ origin: 'https://evil.test' })).status).toBe(403);
    expect(await keyStatusOf(h, key.id)).toBe('active');
    // The same request from this origin, or from a client that is no browser, goes through.
    expect((await patch({ origin: h.url })).status).toBe(200);
    expect((await patch({})).status).toBe(200);
    // Reading stays possible from anywhere the token is (a link opened from another site).
    expect((await board('', { headers: { origin: 'https://evil.test', 'sec-fetch-site': 'cross-site' } })).status).toBe(200);
  });
});
