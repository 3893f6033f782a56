// The operator's submission record: POST /admin/submissions/:id/resend sends a failed email again,
// as its owner can; GET /admin/submissions/:id names the key, the recipient and the Message-ID; and
// GET /admin/submissions/:id/webhook-deliveries leads from the submission to its webhook deliveries.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, postJson, startHarness, type Harness } from '../support/harness.ts';
import { adminClient } from '../support/client.ts';
import { startReceiver, type Receiver } from '../support/webhook-receiver.ts';

const TOKEN = 'resend-admin-token-0123456789';
let h: Harness;
let receiver: Receiver;
beforeAll(async () => {
  h = await startHarness({ env: { ADMIN_TOKEN: TOKEN, WEBHOOK_ALLOW: '127.0.0.2' } });
  receiver = await startReceiver('127.0.0.2');
});
afterAll(async () => {
  await receiver?.close();
  await h?.stop();
});
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

describe('GET /admin/submissions/:id', () => {
  it('names the key (its id and value), the recipient and the Message-ID', async () => {
    const key = await h.createKey({ email: 'Named.Owner@example.test' });
    const submitted = await postJson(`${h.url}/api/contact-api/`, { access_key: key.key, email: 'visitor@example.org', message: 'who gets me' });
    const id = submitted.json.submission_id as string;
    await eventually(async () => ((await statusOf(id)) === 'sent' ? true : undefined), 20_000, '`sent`');
    const record = (await admin('GET', `/admin/submissions/${id}`)).json;
    expect(record).toMatchObject({ submission_id: id, key_id: key.id, key: key.key, recipient: key.email, message_id: `<submission-${id}@example.test>` });
    // The Message-ID the relay got, and the address it went to.
    const mail = h.sink.messages.find((message) => message.parsed.messageId === record.message_id);
    expect(mail?.envelope.to).toEqual([record.recipient]);
    // The same in the list.
    const listed = (await admin('GET', `/admin/submissions?key=${key.key}`)).json.submissions;
    expect(listed).toEqual([expect.objectContaining({ submission_id: id, key_id: key.id, key: key.key, recipient: key.email, message_id: record.message_id })]);
  });

  it('names the Message-ID the email will carry before the relay has accepted it', async () => {
    const key = await h.createKey();
    h.sink.behave(() => ({ code: 451, message: 'not yet' }));
    try {
      const id = (await postJson(`${h.url}/api/contact-api/`, { access_key: key.key, email: 'visitor@example.org', message: 'not yet accepted' })).json
        .submission_id as string;
      await eventually(async () => ((await statusOf(id)) === 'retrying' ? true : undefined), 20_000, '`retrying`');
      expect((await admin('GET', `/admin/submissions/${id}`)).json).toMatchObject({ recipient: key.email, message_id: `<submission-${id}@example.test>` });
    } finally {
      h.sink.behave(undefined);
    }
  });
});

describe('GET /admin/submissions/:id/webhook-deliveries', () => {
  it("lists the submission's webhook deliveries, and only its own", async () => {
    const key = await h.createKey();
    const endpoints = [];
    for (const path of ['first', 'second']) {
      const created = await admin('POST', `/admin/keys/${key.key}/webhooks`, { url: `${receiver.url}/${path}` });
      expect(created.status).toBe(201);
      endpoints.push(created.json.webhook.id as string);
    }
    const submit = async (message: string) =>
      (await postJson(`${h.url}/api/contact-api/`, { access_key: key.key, email: 'visitor@example.org', message })).json.submission_id as string;
    const id = await submit('with two webhooks');
    const other = await submit('another one');

    const listed = await eventually(
      async () => {
        const answer = await admin('GET', `/admin/submissions/${id}/webhook-deliveries`);
        const deliveries = answer.json.deliveries as Array<{ status: string }>;
        return deliveries.length === 2 && deliveries.every((delivery) => delivery.status === 'sent') ? deliveries : undefined;
      },
      20_000,
      'both deliveries sent',
    );
    expect(listed.map((delivery: any) => delivery.submission_id)).toEqual([id, id]);
    expect(listed.map((delivery: any) => delivery.endpoint_id).sort()).toEqual([...endpoints].sort());
    expect(listed.map((delivery: any) => delivery.event)).toEqual(['submission.created', 'submission.created']);
    const others = (await admin('GET', `/admin/submissions/${other}/webhook-deliveries?limit=1`)).json.deliveries;
    expect(others).toHaveLength(1);
    expect(others[0].submission_id).toBe(other);

    expect((await admin('GET', '/admin/submissions/0b7e2c9a-1d2e-4f3a-9b8c-7d6e5f4a3b2c/webhook-deliveries')).status).toBe(404);
    expect((await admin('GET', `/admin/submissions/${id}/webhook-deliveries?limit=0`)).status).toBe(400);
    expect((await admin('GET', `/admin/submissions/${id}/webhook-deliveries`, undefined, null)).status).toBe(401);
  });
});
