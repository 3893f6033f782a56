// "Send me this autoresponse" on a key's settings page: the saved autoresponse, as a visitor would
// receive it, to the owner only, "[Test]" before its subject; no autoresponse row, bound or figure
// spent; at most 5 a key an hour; refused, with the reason, while nothing is saved to send.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, postJson, startHarness, type Harness } from '../support/harness.ts';
import { signIn } from '../support/owner.ts';

let h: Harness;
beforeAll(async () => {
  // A small allowance of key emails per mailbox: the tests must take nothing from it.
  h = await startHarness({ env: { KEY_EMAILS_PER_HOUR: '3' } });
});
afterAll(() => h?.stop());

async function keyWithAutoresponse() {
  const key = await h.createKey();
  await h.sql(
    `update verification_keys set label = 'Shop contact', autoresponse_enabled = true, autoresponse_subject = 'We have your message',
       autoresponse_text = 'Thank you.' || chr(10) || chr(10) || 'Our hours: https://shop.example/hours' where id = $1`,
    [key.id],
  );
  return key;
}

describe('an autoresponse test', () => {
  it('sends the saved autoresponse to the owner, marked as a test, and keeps what was typed on the page', async () => {
    const key = await keyWithAutoresponse();
    const owner = await signIn(h, key.email);
    const page = await owner.post(`/owner/keys/${key.id}/autoresponse-test`, { form: 'settings', label: 'Typed, not saved', autoresponse_subject: 'Typed' });
    expect(page.status).toBe(200);
    expect(page.text).toContain(`The autoresponse as saved is on its way to ${key.email}, &quot;[Test]&quot; before its subject.`);
    expect(page.text).toContain('value="Typed, not saved"');

    const mail = await eventually(
      async () => h.sink.messages.find((message) => message.envelope.to.includes(key.email) && message.parsed.subject?.startsWith('[Test]')),
      30_000,
      'the autoresponse test',
    );
    expect(mail.parsed.subject).toBe('[Test] We have your message');
    expect(mail.envelope.to).toEqual([key.email]);
    expect(mail.parsed.headers.get('auto-submitted')).toBe('auto-replied');
    expect(mail.parsed.text).toContain('Our hours: https://shop.example/hours');
    expect(mail.parsed.text).toContain('This is an automatic reply to the message you sent through "Shop contact"');
    expect(String(mail.parsed.html)).toContain('<a href="https://shop.example/hours">');

    // Counted nowhere: no autoresponse row, so no bound of the key, the owner or a visitor is spent.
    expect(await h.sql('select count(*)::int as n from autoresponses where key_id = $1', [key.id])).toEqual([{ n: 0 }]);
    await eventually(
      async () =>
        (await h.sql<{ email_status: string }>(`select email_status from key_emails where key_id = $1 and kind = 'autoresponse-test'`, [key.id]))[0]
          ?.email_status === 'sent'
          ? true
          : undefined,
      30_000,
      'its row sent',
    );
  }, 90_000);

  it('goes at most 5 times a key an hour; the 6th is refused and says when the next can go', async () => {
    const key = await keyWithAutoresponse();
    const owner = await signIn(h, key.email);
    for (let i = 0; i < 5; i++) {
      const sent = await owner.post(`/owner/keys/${key.id}/autoresponse-test`);
      expect(sent.status).toBe(303);
      expect(sent.headers.location).toBe(`/owner/keys/${key.id}/settings?notice=autoresponse-test-sent`);
    }
    const refused = await owner.post(`/owner/keys/${key.id}/autoresponse-test`, { form: 'settings' });
    expect(refused.status).toBe(429);
    expect(refused.text).toContain('A key sends at most 5 autoresponse tests an hour: the next can go in 60 minutes.');
    expect(await h.sql(`select count(*)::int as n from key_emails where key_id = $1 and kind = 'autoresponse-test'`, [key.id])).toEqual([{ n: 5 }]);
    // The address can still be sent a new key: the tests took nothing from its hourly allowance of key emails.
    expect((await postJson(`${h.url}/`, { email: key.email })).status).toBe(200);
  }, 90_000);

  it('is refused, naming the reason, while the key has no saved subject and text', async () => {
    const key = await h.createKey();
    const owner = await signIn(h, key.email);
    const refused = await owner.post(`/owner/keys/${key.id}/autoresponse-test`, { form: 'settings', autoresponse_subject: 'Typed only' });
    expect(refused.status).toBe(400);
    expect(refused.text).toContain('Save a subject and a text for the autoresponse first: the test sends it as saved.');
    expect(await h.sql(`select count(*)::int as n from key_emails where key_id = $1 and kind = 'autoresponse-test'`, [key.id])).toEqual([{ n: 0 }]);
  }, 60_000);
});
