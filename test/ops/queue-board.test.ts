// The queue dashboard at /admin/queues: behind the admin token, shows the queue, retries a failed job.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, postJson, startHarness, type Harness } from '../support/harness.ts';

const TOKEN = 'queue-board-admin-token-0123';
const basic = (password: string) => `Basic ${Buffer.from(`admin:${password}`).toString('base64')}`;
let h: Harness;
beforeAll(async () => {
  h = await startHarness({ env: { ADMIN_TOKEN: TOKEN } });
});
afterAll(() => h?.stop());

const board = (path: string, init: RequestInit = {}, auth = basic(TOKEN)) =>
  fetch(`${h.url}/admin/queues${path}`, { ...init, headers: { authorization: auth, ...(init.headers ?? {}) } });
const statusOf = async (id: string) => ((await h.sql('select email_status, email_attempts from submissions where id = $1', [id])) as any[])[0];

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
    const id = (await postJson(`${h.url}/api/contact-api/`, { access_key: key.key, email: 'a@example.org', message: 'retry me by hand' })).json.submission_id;
    await eventually(async () => ((await statusOf(id)).email_status === 'failed' ? true : undefined));
    h.sink.behave(undefined);

    const queues = (await (await board('/api/queues?activeQueue=deliveries&status=failed')).json()) as any;
    const deliveries = queues.queues.find((queue: any) => queue.name === 'deliveries');
    expect(deliveries.counts.failed).toBeGreaterThanOrEqual(1);
    expect(deliveries.jobs.map((job: any) => job.id)).toContain(id);

    const retried = await board(`/api/queues/deliveries/${id}/retry`, { method: 'PUT' });
    expect(retried.status).toBe(204);
    const row = await eventually(async () => {
      const current = await statusOf(id);
      return current.email_status === 'sent' ? current : undefined;
    });
    expect(row.email_attempts).toBe(2);
    expect(h.sink.messages.some((mail) => mail.parsed.messageId === `<submission-${id}@example.test>`)).toBe(true);
  });
});
