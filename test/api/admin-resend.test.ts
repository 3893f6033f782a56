// POST /admin/submissions/:id/resend: an operator sends a failed email again, as its owner can.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, postJson, startHarness, type Harness } from '../support/harness.ts';
import { adminClient } from '../support/client.ts';

const TOKEN = 'resend-admin-token-0123456789';
let h: Harness;
beforeAll(async () => {
  h = await startHarness({ env: { ADMIN_TOKEN: TOKEN } });
});
afterAll(() => h?.stop());
const admin = adminClient(() => h, TOKEN);

const statusOf = async (id: string) => (await admin('GET', `/admin/submissions/${id}`)).json?.email_status as string;

describe('POST /admin/submissions/:id/resend', () => {
  it('sends a permanently refused email again once the server accepts mail, and refuses to re-send a sent one', async () => {
    const key = await h.createKey();
    h.sink.behave(() => ({ code: 550, message: 'mailbox unavailable: operator re-send' }));
    const submitted = await postJson(`${h.url}/api/contact-api/`, { access_key: key.key, email: 'visitor@example.org', message: 'refused first' });
    const id = submitted.json.submission_id as string;
    await eventually(async () => ((await statusOf(id)) === 'failed' ? true : undefined), 20_000, '`failed`');
    expect((await admin('GET', `/admin/submissions/${id}`)).json?.last_error).toContain('mailbox unavailable: operator re-send');

    h.sink.behave(undefined);
    expect((await admin('POST', `/admin/submissions/${id}/resend`, undefined, null)).status).toBe(401);
    const resent = await admin('POST', `/admin/submissions/${id}/resend`);
    expect(resent.status).toBe(200);
    expect(resent.json?.submission_id).toBe(id);
    // The record as it stands once the job is queued: a worker may have taken it already.
    expect(['queued', 'sending', 'sent']).toContain(resent.json?.email_status);
    await eventually(async () => ((await statusOf(id)) === 'sent' ? true : undefined), 20_000, '`sent`');
    expect(h.sink.messages.filter((mail) => mail.parsed.text?.includes('refused first'))).toHaveLength(1);

    const again = await admin('POST', `/admin/submissions/${id}/resend`);
    expect(again.status).toBe(409);
    expect(again.json?.message).toBe('Only a failed, bounced or suppressed email can be re-sent; this one is sent.');
  });

  it('answers 404 for an unknown or malformed id', async () => {
    expect((await admin('POST', '/admin/submissions/0b7e2c9a-1d2e-4f3a-9b8c-7d6e5f4a3b2c/resend')).status).toBe(404);
    expect((await admin('POST', '/admin/submissions/not-an-id/resend')).status).toBe(404);
  });
});
