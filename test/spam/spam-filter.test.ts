// The spam filter against a real rspamd: a message like those its owner marked spam is held (kept,
// shown, not emailed) and a plain question delivered; the owner's marks release and teach; what one
// owner teaches decides for that owner's keys first; the key's level and its webhooks; every
// verdict is visible in the admin API, the owner API, the CSV and the metrics. A chat channel is
// gated like a webhook.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RspamdService } from '../../src/local/rspamd.ts';
import { adminClient } from '../support/client.ts';
import { eventually, startHarness, type Harness, type TestKey } from '../support/harness.ts';
import { signIn, type OwnerClient } from '../support/owner.ts';
import { formMessage, settledRecord, spamFilterEnv, startSpamFilter, submitTo } from '../support/spam-filter.ts';
import { startReceiver, type Receiver } from '../support/webhook-receiver.ts';
import { startChatStandIn, type ChatStandIn } from '../support/chat-stand-ins.ts';

const TOKEN = 'spam-test-admin-token-0123456789';
const LINK_FARM = `Cheap rankings! ${Array.from({ length: 12 }, (_, i) => `https://seo-deal${i}.com/offer`).join(' ')}`;

let filter: RspamdService;
let h: Harness;
let receiver: Receiver;
let slack: ChatStandIn;
const admin = adminClient(() => h, TOKEN);

beforeAll(async () => {
  filter = await startSpamFilter();
  h = await startHarness({
    env: { ...spamFilterEnv(filter), ADMIN_TOKEN: TOKEN, WEBHOOK_ALLOW: '127.0.0.2', WEBHOOK_RETRY_BACKOFF_MS: '100', SPAM_TEACH_PER_KEY_PER_HOUR: '100' },
  });
  receiver = await startReceiver('127.0.0.2');
  slack = await startChatStandIn('slack', '127.0.0.2');
  slack.publicUrl = h.config.PUBLIC_URL;
}, 90_000);
afterAll(async () => {
  await receiver?.close();
  await slack?.close();
  await h?.stop();
  await filter?.stop();
});

const submit = (key: TestKey, fields: { subject?: string; message: string }) => submitTo(h, key, fields);

/** The submission once the worker is done with it (sent, spam, or anything settled). */
const settled = (id: string) => settledRecord(h, TOKEN, id);

const mailsWith = (text: string) => h.sink.messages.filter((mail) => (mail.parsed.text ?? '').includes(text));

async function mark(owner: OwnerClient, id: string, as: 'spam' | 'ham') {
  const response = await owner.api('POST', `/submissions/${id}/spam-mark`, { mark: as });
  expect(response.status).toBe(200);
  return response.json;
}

/** Submits the messages to the key, waits until each is checked, and marks them as its owner; each mark is taught. */
async function teach(key: TestKey, owner: OwnerClient, messages: { spam: string[]; ham: string[] }) {
  const spamIds = [];
  const hamIds = [];
  for (let n = 0; n < Math.max(messages.spam.length, messages.ham.length); n += 1) {
    if (messages.spam[n]) spamIds.push(await submit(key, { message: messages.spam[n]! }));
    if (messages.ham[n]) hamIds.push(await submit(key, { message: messages.ham[n]! }));
  }
  for (const id of [...spamIds, ...hamIds]) await settled(id);
  for (const id of spamIds) expect((await mark(owner, id, 'spam')).teaching).toBe('taught');
  for (const id of hamIds) expect((await mark(owner, id, 'ham')).teaching).toBe('taught');
}

/**
 * Words no other message has, written without digits (a counter's decimal digits as letters), so
 * that a message of them shares with the others only what a test adds to it.
 */
function newWordMaker(tag: string): (count: number) => string {
  let counter = 0;
  return (count) => Array.from({ length: count }, () => `w${String(counter++).replace(/\d/g, (digit) => 'abcdefghij'[Number(digit)]!)}${tag}`).join(' ');
}

let nextSeed = 1_000;
/** `count` messages of each kind in the vocabularies of formMessage, none taught before in this file. */
function newMessages(count: number): { spam: string[]; ham: string[] } {
  const seeds = Array.from({ length: count }, () => nextSeed++);
  return { spam: seeds.map((seed) => formMessage('spam', seed).message), ham: seeds.map((seed) => formMessage('ham', seed).message) };
}

/** The owner of `key`, signed in, having marked 8 spam and 8 ham: their own statistics count, and a message like the spam is held. */
async function ownerWhoMarked(key: TestKey): Promise<OwnerClient> {
  const owner = await signIn(h, key.email);
  await teach(key, owner, newMessages(8));
  return owner;
}

/** The score of the owner's own statistics: everyone's depend on what the other tests taught. */
const ownerScore = (record: { spam: { reasons: Array<{ symbol: string; score: number }> } }) =>
  record.spam.reasons.find((reason) => reason.symbol === 'BAYES_OWNER_SPAM')?.score ?? 0;

describe('the spam check', () => {
  it('holds a message like those its owner marked spam, with its score and reasons, and emails a plain question', async () => {
    const key = await h.createKey();
    await ownerWhoMarked(key);
    const question = 'Hello, does your team plan include phone support? We are five people.';
    const [spamId, hamId] = [await submit(key, formMessage('spam', 1)), await submit(key, { subject: 'Pricing', message: question })];

    const spam = await settled(spamId);
    expect(spam.email_status).toBe('spam');
    expect(spam.spam).toMatchObject({ verdict: 'spam', mark: null });
    expect(spam.spam.score).toBeGreaterThanOrEqual(h.config.SPAM_SCORE_NORMAL);
    expect(spam.spam.reasons[0].symbol).toBe('BAYES_OWNER_SPAM');
    const ham = await settled(hamId);
    expect(ham.email_status).toBe('sent');
    expect(ham.spam.verdict).toBe('ham');
    expect(ham.spam.score).toBeLessThan(h.config.SPAM_SCORE_NORMAL);

    expect(mailsWith(question)).toHaveLength(1);
    expect(mailsWith(formMessage('spam', 1).message)).toHaveLength(0);
    const csv = (await admin('GET', `/admin/submissions.csv?key=${key.key}`)).text;
    expect(csv).toContain(',spam,');
    expect(csv).toMatch(/BAYES_OWNER_SPAM \d/);
    const metrics = (await admin('GET', '/metrics')).text;
    expect(metrics).toMatch(/cfs_spam_checks_total\{verdict="spam"\} [1-9]/);
    expect(metrics).toMatch(/cfs_spam_checks_total\{verdict="ham"\} [1-9]/);
  });

  it("checks nothing for a key whose filter is off; at the strict level holds what everyone's marks call spam, which the normal level sends", async () => {
    const off = await h.createKey();
    expect((await admin('PATCH', `/admin/keys/${off.key}`, { spam_filter: 'off' })).json.spam_filter).toBe('off');
    const unfiltered = await settled(await submit(off, { message: LINK_FARM }));
    expect(unfiltered.email_status).toBe('sent');
    expect(unfiltered.spam).toBeNull();

    // Five links: FORM_MANY_LINKS, a signal far under the normal level.
    const fewLinks = `See ${Array.from({ length: 5 }, (_, i) => `https://shop${i}.com/`).join(' ')} for details`;
    const normal = await h.createKey();
    const atNormal = await settled(await submit(normal, { message: fewLinks }));
    expect(atNormal).toMatchObject({ email_status: 'sent', spam: { verdict: 'ham' } });
    expect(atNormal.spam.reasons[0]).toMatchObject({ symbol: 'FORM_MANY_LINKS' });

    // Everyone's statistics count once 20 of each were taught, here by another owner.
    const teacher = await h.createKey();
    await teach(teacher, await signIn(h, teacher.email), newMessages(20));
    const strict = await h.createKey();
    expect((await admin('PATCH', `/admin/keys/${strict.key}`, { spam_filter: 'strict' })).json.spam_filter).toBe('strict');
    const pitch = formMessage('spam', 2);
    const sent = await settled(await submit(normal, pitch));
    expect(sent).toMatchObject({ email_status: 'sent', spam: { verdict: 'ham' } });
    expect(sent.spam.reasons[0].symbol).toBe('BAYES_SPAM');
    expect(sent.spam.score).toBeGreaterThanOrEqual(h.config.SPAM_SCORE_STRICT);
    expect((await settled(await submit(strict, pitch))).email_status).toBe('spam');
  });
});

describe("the owner's marks", () => {
  it('"not spam" sends a held message and teaches ham; "spam" on a delivered one teaches spam; each is reversible', async () => {
    const key = await h.createKey();
    const owner = await ownerWhoMarked(key);
    const heldId = await submit(key, { message: `${formMessage('spam', 3).message} (a customer's list of our shops)` });
    expect((await settled(heldId)).email_status).toBe('spam');

    const view = await owner.get(`/owner/keys/${key.id}/spam`);
    expect(view.status).toBe(200);
    expect(view.text).toContain(`id="s-${heldId}"`);
    expect(view.text).toContain('BAYES_OWNER_SPAM');

    const released = await mark(owner, heldId, 'ham');
    expect(released).toMatchObject({ released: true, teaching: 'taught' });
    // Its place in the allowance is taken, and no longer waiting for the filter's answer.
    expect(await h.sql('select spam_teach_pending as pending, spam_taught_at is not null as taught from submissions where id = $1', [heldId])).toEqual([
      { pending: false, taught: true },
    ]);
    const sent = await settled(heldId);
    expect(sent.email_status).toBe('sent');
    expect(sent.spam).toMatchObject({ verdict: 'spam', mark: 'ham' });
    expect(mailsWith("a customer's list of our shops")).toHaveLength(1);
    expect((await owner.get(`/owner/keys/${key.id}/spam`)).text).not.toContain(`id="s-${heldId}"`);

    const deliveredId = await submit(key, formMessage('ham', 4));
    expect((await settled(deliveredId)).email_status).toBe('sent');
    const taught = await mark(owner, deliveredId, 'spam');
    expect(taught).toMatchObject({ released: false, teaching: 'taught' });
    expect(taught.submission.spam.mark).toBe('spam');
    // And back: marked not spam again, nothing is re-sent (it was delivered).
    const back = await mark(owner, deliveredId, 'ham');
    expect(back).toMatchObject({ released: false });
    expect(back.submission.spam.mark).toBe('ham');
    expect(mailsWith(formMessage('ham', 4).message)).toHaveLength(1);
  });

  it("teaches the owner's own keys first: after 15 marks of each, similar messages are held for this owner and not for another", async () => {
    const key = await h.createKey();
    const other = await h.createKey();
    const owner = await signIn(h, key.email);
    const before = await settled(await submit(key, formMessage('spam', 100)));
    expect(before.email_status).toBe('sent');

    const spamIds = [];
    const hamIds = [];
    for (let seed = 1; seed <= 15; seed += 1) {
      spamIds.push(await submit(key, formMessage('spam', 200 + seed)));
      hamIds.push(await submit(key, formMessage('ham', 200 + seed)));
    }
    for (const id of [...spamIds, ...hamIds]) await settled(id);
    for (const id of spamIds) expect((await mark(owner, id, 'spam')).teaching).toMatch(/taught|known/);
    for (const id of hamIds) expect((await mark(owner, id, 'ham')).teaching).toMatch(/taught|known/);

    const caught = await settled(await submit(key, formMessage('spam', 300)));
    expect(caught.email_status).toBe('spam');
    expect(caught.spam.reasons.map((reason: { symbol: string }) => reason.symbol)).toContain('BAYES_OWNER_SPAM');
    expect((await settled(await submit(key, formMessage('ham', 300)))).email_status).toBe('sent');
    // Another owner's key: these marks are not its owner's, and everyone's alone hold nothing at the normal level.
    expect((await settled(await submit(other, formMessage('spam', 300)))).email_status).toBe('sent');
  });

  it('learns from a mark the pairs its words make a word apart too: the same words with others between them are held', async () => {
    const key = await h.createKey();
    const owner = await signIn(h, key.email);
    const pitch = 'guaranteed backlinks ranking traffic casino bonus crypto profit bitcoin pills loan winner'.split(' ');
    const ordinary = 'question pricing invoice meeting schedule appointment booking quote contract office delivery account'.split(' ');
    const numbers = [1, 2, 3, 4, 5];
    await teach(key, owner, { spam: numbers.map((n) => `${pitch.join(' ')} offer${n}`), ham: numbers.map((n) => `${ordinary.join(' ')} note${n}`) });

    // A new word after each of the pitch's: no two words of it are neighbours any more, as in no marked message.
    const spread = await settled(await submit(key, { message: pitch.map((word, index) => `${word} aside${index}`).join(' ') }));
    expect(spread.email_status).toBe('spam');
    expect(spread.spam.reasons.map((reason: { symbol: string }) => reason.symbol)).toContain('BAYES_OWNER_SPAM');
    const ordinarySpread = await settled(await submit(key, { message: ordinary.map((word, index) => `${word} aside${index}`).join(' ') }));
    expect(ordinarySpread.email_status).toBe('sent');
  });

  it('learns what a message carries besides its words: a phone number and a price raise the score of a message of new words', async () => {
    const key = await h.createKey();
    const owner = await signIn(h, key.email);
    const newWords = newWordMaker('x');
    const numbers = [1, 2, 3, 4, 5, 6, 7, 8];
    // Spam and ham both ask to be called: only the numbers and prices tell them apart.
    await teach(key, owner, {
      spam: numbers.map((n) => `${newWords(12)} please call 0871230${n}55 for £${n}00 today`),
      ham: numbers.map(() => `${newWords(12)} please call us for a chat today`),
    });

    // A number of another length than the ones taught: only what it is, not its digits, is shared.
    const words = newWords(12);
    const carrying = await settled(await submit(key, { message: `${words} please call 02099462201 for £75 today` }));
    const plain = await settled(await submit(key, { message: `${words} please call them for it today` }));
    expect(ownerScore(carrying)).toBeGreaterThan(ownerScore(plain) + 2);
    expect(plain.email_status).toBe('sent');
  });

  it('reads a number of 3 digits or more by its length: a short code never taught, in the words around the ones taught, raises the score', async () => {
    const key = await h.createKey();
    const owner = await signIn(h, key.email);
    const newWords = newWordMaker('y');
    const numbers = [1, 2, 3, 4, 5, 6, 7, 8];
    // Four digits: no run of five, so the digits token (above) plays no part.
    await teach(key, owner, { spam: numbers.map((n) => `${newWords(12)} to 8${n}${n}4 now`), ham: numbers.map(() => newWords(16)) });

    const words = newWords(12);
    const numbered = await settled(await submit(key, { message: `${words} to 7390 now` }));
    const worded = await settled(await submit(key, { message: `${words} to them now` }));
    expect(ownerScore(numbered)).toBeGreaterThan(ownerScore(worded) + 1);
    // What the owner sees is the message as sent.
    expect(numbered.message).toContain('7390');
  });
});

describe('webhooks', () => {
  it('carry the verdict, skip held spam unless the key asks for it, and send it once its owner says not spam; a chat channel alike', async () => {
    const key = await h.createKey();
    const owner = await ownerWhoMarked(key);
    const hook = await admin('POST', `/admin/keys/${key.key}/webhooks`, { url: `${receiver.url}/hook` });
    expect(hook.status).toBe(201);
    const chat = await admin('POST', `/admin/keys/${key.key}/webhooks`, { kind: 'slack', url: slack.url });
    expect(chat.status).toBe(201);
    const bodies = () => receiver.received.map((call) => JSON.parse(call.body));
    /** The Slack message of a submission, once posted: its readable text. */
    const posted = (id: string) => slack.calls.map((call) => JSON.stringify(call.body)).find((body) => body.includes(`/owner/submissions/${id}`));

    const hamId = await submit(key, { message: 'A plain question about opening hours' });
    const spamId = await submit(key, formMessage('spam', 5));
    await eventually(async () => bodies().find((body) => body.data.id === hamId), 20_000, 'the ham webhook');
    expect(bodies().find((body) => body.data.id === hamId).data.spam).toMatchObject({ verdict: 'ham' });
    const deliveries = async () => (await admin('GET', `/admin/keys/${key.key}/webhook-deliveries`)).json.deliveries as any[];
    // The webhook's own delivery, not the chat channel's: one still waiting for the verdict would be
    // sent once the key below asks for its spam.
    const skipped = await eventually(
      async () => (await deliveries()).find((d) => d.submission_id === spamId && d.kind === 'webhook' && d.status === 'skipped'),
      20_000,
      'the spam delivery skipped',
    );
    expect(skipped.last_error).toContain('held as spam');
    expect(bodies().some((body) => body.data.id === spamId)).toBe(false);
    await eventually(async () => posted(hamId), 20_000, 'the ham chat message');
    const chatSkipped = await eventually(
      async () => (await deliveries()).find((d) => d.submission_id === spamId && d.kind === 'slack' && d.status === 'skipped'),
      20_000,
      'the spam chat message skipped',
    );
    expect(chatSkipped.last_error).toContain('held as spam');
    expect(posted(spamId)).toBeUndefined();

    await admin('PATCH', `/admin/keys/${key.key}`, { spam_to_webhooks: true });
    const spamToHooks = await submit(key, formMessage('spam', 6));
    const carried = await eventually(async () => bodies().find((body) => body.data.id === spamToHooks), 20_000, 'the spam webhook');
    expect(carried.data.spam).toMatchObject({ verdict: 'spam', mark: null });
    // Posted to the chat too, saying it was held.
    expect(await eventually(async () => posted(spamToHooks), 20_000, 'the spam chat message')).toContain('Held as spam');

    await mark(owner, spamId, 'ham');
    const released = await eventually(async () => bodies().find((body) => body.data.id === spamId), 20_000, 'the released webhook');
    expect(released.data.spam).toMatchObject({ verdict: 'spam', mark: 'ham' });
    expect(await eventually(async () => posted(spamId), 20_000, 'the released chat message')).not.toContain('Held as spam');
    expect(slack.calls.flatMap((call) => call.problems)).toEqual([]);
  });
});
