// With the spam filter on, webhooks and chat channels still do not wait for the SMTP relay. The
// relay refuses every message (its breaker open), so no email is sent and the email's worker
// checks nothing; the webhook's worker checks each submission itself, against the real rspamd,
// before anything is posted: the ham goes out at once with its verdict, the spam follows its key's
// setting (skipped, or posted as held spam). The email acts on the same verdict once the relay is
// back: the ham is emailed without a second check, the spam is kept.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RspamdService } from '../../src/local/rspamd.ts';
import { startChatStandIn, type ChatStandIn } from '../support/chat-stand-ins.ts';
import { adminClient } from '../support/client.ts';
import { eventually, startHarness, type Harness, type TestKey } from '../support/harness.ts';
import { spamFilterEnv, startSpamFilter, submitTo } from '../support/spam-filter.ts';
import { startReceiver, type Receiver } from '../support/webhook-receiver.ts';

const HOST = '127.0.0.7';
const TOKEN = 'test-admin-token-0123456789';
/** A minute is what an event waited for an email's verdict before; half of it, on a busy machine. */
const BOUND_MS = 30_000;
/** 12 links score FORM_LINK_FARM (0.8): held at the level these keys use. */
const LINK_FARM = `Cheap rankings! ${Array.from({ length: 12 }, (_, i) => `https://seo-deal${i}.com/offer`).join(' ')}`;
const QUESTION = 'Hello, does your team plan include phone support? We are five people.';

let filter: RspamdService;
let h: Harness;
let receiver: Receiver;
let slack: ChatStandIn;
const admin = adminClient(() => h, TOKEN);

beforeAll(async () => {
  filter = await startSpamFilter();
  receiver = await startReceiver(HOST);
  slack = await startChatStandIn('slack', HOST);
  h = await startHarness({
    env: {
      ...spamFilterEnv(filter),
      // The link farm is spam at this level, a plain question is not.
      SPAM_SCORE_NORMAL: '0.8',
      ADMIN_TOKEN: TOKEN,
      WEBHOOK_ALLOW: HOST,
      SMTP_BREAKER_THRESHOLD: '2',
      SMTP_PROBE_INTERVAL_MS: '2000',
    },
  });
  slack.publicUrl = h.config.PUBLIC_URL;
}, 90_000);
afterAll(async () => {
  await h?.stop();
  await receiver?.close();
  await slack?.close();
  await filter?.stop();
});

const webhookPosts = (id: string) => receiver.received.filter((call) => JSON.parse(call.body).data.id === id);
const slackPosts = (id: string) => slack.calls.filter((call) => JSON.stringify(call.body).includes(`/owner/submissions/${id}`));
const deliveries = (id: string) =>
  h.sql<{ email_status: string; last_error: string | null }>('select email_status, last_error from webhook_deliveries where submission_id = $1', [id]);
const submission = async (id: string) =>
  (
    await h.sql<{ email_status: string; spam_verdict: string | null; spam_checked_at: Date | null }>(
      'select email_status, spam_verdict, spam_checked_at from submissions where id = $1',
      [id],
    )
  )[0]!;

async function keyWithHooks(spamToWebhooks: boolean): Promise<TestKey> {
  const key = await h.createKey();
  expect((await admin('PATCH', `/admin/keys/${key.key}`, { spam_to_webhooks: spamToWebhooks })).status).toBe(200);
  expect((await admin('POST', `/admin/keys/${key.key}/webhooks`, { url: receiver.url })).status).toBe(201);
  expect((await admin('POST', `/admin/keys/${key.key}/webhooks`, { kind: 'slack', url: slack.url })).status).toBe(201);
  return key;
}

describe('the spam filter on, the SMTP relay refusing everything', () => {
  it('checks each submission in the webhook worker and posts its webhook and chat message promptly, following the verdict', async () => {
    h.sink.behave(() => ({ code: 451, message: 'Try again later' }));
    const quiet = await keyWithHooks(false);
    const loud = await keyWithHooks(true);
    const started = Date.now();
    const ham = await submitTo(h, quiet, { subject: 'Pricing', message: QUESTION });
    const heldSpam = await submitTo(h, quiet, { message: LINK_FARM });
    const postedSpam = await submitTo(h, loud, { message: LINK_FARM });

    // The ham's webhook and chat message, with the verdict the webhook worker found.
    const hamHook = await eventually(async () => webhookPosts(ham)[0], BOUND_MS, "the ham's webhook");
    expect(JSON.parse(hamHook.body).data.spam).toMatchObject({ verdict: 'ham', mark: null });
    await eventually(async () => slackPosts(ham)[0], BOUND_MS, "the ham's chat message");
    // Held spam of a key that sends none to its webhooks: skipped, not posted.
    for (const row of await eventually(
      async () => {
        const rows = await deliveries(heldSpam);
        return rows.length === 2 && rows.every((delivery) => delivery.email_status === 'skipped') ? rows : undefined;
      },
      BOUND_MS,
      "the held spam's deliveries skipped",
    ))
      expect(row.last_error).toContain('held as spam');
    // A key that asked for its spam: posted, saying so.
    const spamHook = await eventually(async () => webhookPosts(postedSpam)[0], BOUND_MS, 'the spam webhook of the key that asked for it');
    expect(JSON.parse(spamHook.body).data.spam).toMatchObject({ verdict: 'spam', mark: null });
    expect(JSON.stringify((await eventually(async () => slackPosts(postedSpam)[0], BOUND_MS, 'the spam chat message')).body)).toContain('Held as spam');
    console.info(`webhooks and chat messages settled ${((Date.now() - started) / 1000).toFixed(1)} s after the submissions, the relay refusing`);

    // No email went; the verdicts are stored, the spam held.
    expect(h.sink.messages).toHaveLength(0);
    expect(webhookPosts(heldSpam)).toHaveLength(0);
    expect(slackPosts(heldSpam)).toHaveLength(0);
    for (const id of [heldSpam, postedSpam]) expect(await submission(id)).toMatchObject({ email_status: 'spam', spam_verdict: 'spam' });
    const checked = await submission(ham);
    expect(checked.spam_verdict).toBe('ham');
    expect(['queued', 'retrying']).toContain(checked.email_status);

    // The relay is back: the ham is emailed on that verdict, not checked again; the spam is not.
    h.sink.behave(undefined);
    await eventually(async () => ((await submission(ham)).email_status === 'sent' ? true : undefined), 60_000, "the ham's email");
    expect((await submission(ham)).spam_checked_at).toEqual(checked.spam_checked_at);
    expect(h.sink.messages.filter((mail) => (mail.parsed.text ?? '').includes(QUESTION))).toHaveLength(1);
    expect(h.sink.messages.filter((mail) => (mail.parsed.text ?? '').includes('seo-deal'))).toHaveLength(0);
    expect(webhookPosts(ham)).toHaveLength(1);
    expect(slackPosts(ham)).toHaveLength(1);
    expect(slack.calls.flatMap((call) => call.problems)).toEqual([]);
  });
});
