// Spam campaigns across owners, against a real rspamd: a text the owners of 3 different mailboxes
// marked spam is held for every other key at the normal and strict levels, also with another name,
// phone number or link in it; one owner marking it, however often and from however many keys of
// their mailbox, holds it for their own keys only and makes no campaign, nor do the mailboxes of one
// domain, nor marks on a short text; a mark reversed to not spam takes its vote back; an owner who
// said not spam keeps getting it; an unrelated message goes out; a campaign check that fails leaves
// the filter's verdict; and a campaign is held while rspamd is down.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RspamdService } from '../../src/local/rspamd.ts';
import { adminClient } from '../support/client.ts';
import { startHarness, type Harness, type TestKey } from '../support/harness.ts';
import { signIn, type OwnerClient } from '../support/owner.ts';
import { formMessage, settledRecord, spamFilterEnv, startSpamFilter, submitTo, teachByMarks } from '../support/spam-filter.ts';

const TOKEN = 'campaign-test-admin-token-0123456789';

let filter: RspamdService;
/** Set once the last test has stopped rspamd. */
let filterStopped = false;
let h: Harness;
const admin = adminClient(() => h, TOKEN);

beforeAll(async () => {
  filter = await startSpamFilter();
  h = await startHarness({
    env: { ...spamFilterEnv(filter), ADMIN_TOKEN: TOKEN, SPAM_TEACH_PER_KEY_PER_HOUR: '100' },
  });
}, 90_000);
afterAll(async () => {
  await h?.stop();
  if (!filterStopped) await filter?.stop();
});

/** One campaign's text, each test's its own: the same pitch with a name, a phone number and a link that change. */
const PITCHES = {
  seo: (v: Variant) =>
    `Hello, my name is ${v.name} and I am reaching out because we help small businesses like yours reach the first page of search results within weeks. Our team builds quality backlinks and rewrites every page of your website. Call me on ${v.phone} or book a free audit at ${v.link} today.`,
  solar: (v: Variant) =>
    `Dear owner, ${v.name} here from the regional energy programme. Your building qualifies for solar panels at no upfront cost and lower electricity bills from the first month. Places in this round are limited, so reply or phone ${v.phone} and see the details at ${v.link} before Friday.`,
  loans: (v: Variant) =>
    `Good morning, I am ${v.name}, a funding adviser. Your company is pre-approved for a business loan of up to fifty thousand with no credit check and money on your account within two days. To claim it call ${v.phone} or fill in the short form at ${v.link} now.`,
  design: (v: Variant) =>
    `Hi there, this is ${v.name}. I looked at your website and noticed it is slow on phones and hard to read, which loses you customers every day. We redesign sites like yours in one week for a fixed low price. Text ${v.phone} or see our portfolio at ${v.link} please.`,
  reviews: (v: Variant) =>
    `Hello, ${v.name} writing. We can add fifty five-star reviews to your business listing every month from real local accounts, which brings more calls and better rankings. Prices start low and the first ten are free. Message ${v.phone} on WhatsApp or order at ${v.link} today.`,
  leads: (v: Variant) =>
    `Hi, ${v.name} from a lead generation agency. We send you twenty qualified customer enquiries every week for your trade, paid only when they call you back. Most of our partners double their bookings within a month. Phone ${v.phone} or start your free week at ${v.link} today.`,
  domains: (v: Variant) =>
    `Hello, this is ${v.name}. The domain name matching your business is about to be sold at auction, and we have reserved it for you for three days only. Secure it before a competitor does: call ${v.phone} or pay the small reservation fee at ${v.link} now.`,
  courses: (v: Variant) =>
    `Hi, ${v.name} from an online academy. Our certified marketing course teaches your staff social media, email campaigns and paid ads in six short evening lessons, with a diploma at the end. Enrol before the month is out for half price: call ${v.phone} or sign up at ${v.link} today.`,
  apps: (v: Variant) =>
    `Greetings from ${v.name}! We build mobile apps for restaurants, shops and salons that bring repeat customers with loyalty points and push offers. Launch yours this month with our starter package and pay nothing for the first quarter. Call ${v.phone} or visit ${v.link} for a demo.`,
};
type Variant = { name: string; phone: string; link: string };

const VARIANTS: Variant[] = [
  { name: 'Anna Berg', phone: '+1 555 014 2231', link: 'https://rank-boost.example/audit?ref=a1' },
  { name: 'Marco', phone: '0871 234 5678', link: 'http://www.rankboost-pro.example/free' },
  { name: 'Julia Novak', phone: '(020) 7946 0958', link: 'https://go.example/x7Yq2' },
  { name: 'Tom', phone: '+44 7700 900123', link: 'https://seo-wins.example/?utm_source=form' },
  { name: 'Priya Shah', phone: '555-0188', link: 'https://audit-now.example/start' },
  { name: 'Li Wei', phone: '+49 30 901820', link: 'https://best-rank.example/go/2' },
];

/** The n-th variant of a pitch (wrapping around, with a changed number so no two are the same). */
const text = (pitch: keyof typeof PITCHES, n: number) => {
  const variant = VARIANTS[n % VARIANTS.length]!;
  return PITCHES[pitch]({ ...variant, phone: `${variant.phone}${n >= VARIANTS.length ? ` ext ${n}` : ''}` });
};

const AUDIT_QUESTION =
  'Hello, we run a bakery with two shops and would like to know whether your team also checks the opening hours shown on maps, and what a yearly plan costs for us.';

type Owner = { key: TestKey; client: OwnerClient };

/** An owner of their own mailbox at a domain of their own, unless `email` says otherwise. */
async function newOwner(email = `owner@${randomBytes(4).toString('hex')}.example`): Promise<Owner> {
  const key = await h.createKey({ email });
  return { key, client: await signIn(h, key.email) };
}

const submit = (key: TestKey, message: string) => submitTo(h, key, { message });
const settled = (id: string) => settledRecord(h, TOKEN, id);

async function mark(owner: Owner, id: string, as: 'spam' | 'ham') {
  const response = await owner.client.api('POST', `/submissions/${id}/spam-mark`, { mark: as });
  expect(response.status).toBe(200);
  return response.json;
}

/**
 * The owner receives `message` on their key and marks it spam: sent (the filter alone does not hold
 * it, nor do others' marks), or held as a near-copy of what this owner marked spam before.
 */
async function receiveAndMarkSpam(owner: Owner, message: string, key = owner.key): Promise<string> {
  const id = await submit(key, message);
  const record = await settled(id);
  expect(symbols(record)).not.toContain('FORM_CAMPAIGN');
  if (record.email_status !== 'sent') expect(symbols(record)[0]).toBe('FORM_MARKED_COPY');
  await mark(owner, id, 'spam');
  return id;
}

const symbols = (record: { spam: { reasons: Array<{ symbol: string }> } | null }) => (record.spam?.reasons ?? []).map((reason) => reason.symbol);

const mailsWith = (fragment: string) => h.sink.messages.filter((mail) => (mail.parsed.text ?? '').includes(fragment));

describe('spam campaigns', () => {
  it('holds a text marked spam by the owners of 3 mailboxes for a 4th owner, with another name, number and link, and says why', async () => {
    const [first, second, third] = [await newOwner(), await newOwner(), await newOwner()];
    const fourth = await newOwner();
    await receiveAndMarkSpam(first, text('seo', 0));
    await receiveAndMarkSpam(second, text('seo', 1));
    // Two mailboxes are not yet a campaign.
    const early = await settled(await submit(fourth.key, text('seo', 3)));
    expect(early.email_status).toBe('sent');
    expect(symbols(early)).not.toContain('FORM_CAMPAIGN');

    await receiveAndMarkSpam(third, text('seo', 2));
    const heldId = await submit(fourth.key, text('seo', 4));
    const held = await settled(heldId);
    expect(held.email_status).toBe('spam');
    expect(held.spam.verdict).toBe('spam');
    expect(held.spam.score).toBeGreaterThanOrEqual(h.config.SPAM_SCORE_NORMAL);
    expect(held.spam.reasons[0]).toMatchObject({
      symbol: 'FORM_CAMPAIGN',
      description: 'near-identical to messages marked spam by the owners of 3 other mailboxes',
    });
    expect(mailsWith('Priya Shah')).toHaveLength(0);

    // The owner sees it, and why, in the Spam view and the owner API.
    const view = await fourth.client.get(`/owner/keys/${fourth.key.id}/spam`);
    expect(view.text).toContain(`id="s-${heldId}"`);
    expect(view.text).toContain('FORM_CAMPAIGN');
    expect(view.text).toContain('marked spam by the owners of 3 other mailboxes');
    const owned = await fourth.client.api('GET', `/submissions/${heldId}`);
    expect(owned.json.spam.reasons[0].symbol).toBe('FORM_CAMPAIGN');

    // The strict level holds it too; a key whose filter is off gets it.
    const strict = await h.createKey();
    await admin('PATCH', `/admin/keys/${strict.key}`, { spam_filter: 'strict' });
    expect((await settled(await submit(strict, text('seo', 5)))).email_status).toBe('spam');
    const off = await h.createKey();
    await admin('PATCH', `/admin/keys/${off.key}`, { spam_filter: 'off' });
    const unfiltered = await settled(await submit(off, text('seo', 6)));
    expect(unfiltered.email_status).toBe('sent');
    expect(unfiltered.spam).toBeNull();

    // A marking owner's other key holds it too: their own mark counts with the others'.
    const firstOtherKey = await h.createKey({ email: first.key.email });
    const ownHeld = await settled(await submit(firstOtherKey, text('seo', 7)));
    expect(ownHeld.email_status).toBe('spam');
    expect(ownHeld.spam.reasons[0].description).toBe("near-identical to messages marked spam by this key's owner and the owners of 2 other mailboxes");
  });

  it("one person's inbox under three Yandex domains marking a short request makes no campaign of another owner's customers' requests", async () => {
    for (const email of ['x@yandex.ru', 'x@ya.ru', 'x@yandex.com']) await receiveAndMarkSpam(await newOwner(email), 'Hi, I would like a quote for my kitchen');
    const other = await newOwner();
    for (const message of [
      'Hello, I would like to get a quote for my kitchen',
      'Hi, I would like a price for my kitchen',
      'Hi, I would like a quote for my bathroom',
    ]) {
      const record = await settled(await submit(other.key, message));
      expect(record.email_status).toBe('sent');
      expect(symbols(record)).not.toContain('FORM_CAMPAIGN');
    }
    expect(mailsWith('for my bathroom')).toHaveLength(1);
  });

  it('a text of fewer than 20 words makes no campaign, whoever marks it', async () => {
    // 19 words: owners of 3 mailboxes at 3 domains mark it, and another owner still gets it.
    const request = (n: number) => `Hello, could you send me a quote for painting ${n} rooms and the hallway of our flat next month?`;
    for (const n of [2, 3, 4]) await receiveAndMarkSpam(await newOwner(), request(n));
    const record = await settled(await submit((await newOwner()).key, request(5)));
    expect(record.email_status).toBe('sent');
    expect(symbols(record)).not.toContain('FORM_CAMPAIGN');
  });

  it("holds a near-copy of what an owner marked spam for that owner's keys, not for another owner's, until the owner says one is not spam", async () => {
    const [owner, other] = [await newOwner(), await newOwner()];
    await receiveAndMarkSpam(owner, text('courses', 0));

    // Another name, number and link: held for this owner, and says why.
    const heldId = await submit(owner.key, PITCHES.courses({ name: 'Ingrid Holm', phone: '0871 234 5678', link: 'https://learn-fast.example/enrol' }));
    const held = await settled(heldId);
    expect(held.email_status).toBe('spam');
    expect(held.spam.score).toBeGreaterThanOrEqual(h.config.SPAM_SCORE_NORMAL);
    expect(held.spam.reasons[0]).toMatchObject({ symbol: 'FORM_MARKED_COPY', description: "near-identical to a message this key's owner marked spam" });
    expect(mailsWith('Ingrid Holm')).toHaveLength(0);
    // The owner's other key (the same mailbox) holds it too.
    const secondKey = await h.createKey({ email: owner.key.email });
    expect((await settled(await submit(secondKey, text('courses', 2)))).email_status).toBe('spam');
    // One owner's mark holds nothing for another owner, nor an unrelated message for this one.
    const elsewhere = await settled(await submit(other.key, text('courses', 3)));
    expect(elsewhere.email_status).toBe('sent');
    expect(symbols(elsewhere)).not.toContain('FORM_MARKED_COPY');
    expect((await settled(await submit(owner.key, AUDIT_QUESTION))).email_status).toBe('sent');

    // "Not spam" sends the held one, and the owner's keys get the text from then on.
    expect(await mark(owner, heldId, 'ham')).toMatchObject({ released: true });
    expect((await settled(heldId)).email_status).toBe('sent');
    expect(mailsWith('Ingrid Holm')).toHaveLength(1);
    const next = await settled(await submit(owner.key, text('courses', 4)));
    expect(next.email_status).toBe('sent');
    expect(symbols(next)).not.toContain('FORM_MARKED_COPY');
  });

  it("an inbox's spellings at Yandex, Proton and Apple are one mailbox's vote", async () => {
    const spellings = ['y.z@yandex.ru', 'y-z@ya.ru', 'y.z@yandex.com', 'q.r@proton.me', 'qr@pm.me', 'q_r@protonmail.com'];
    for (const [n, email] of spellings.entries()) await receiveAndMarkSpam(await newOwner(email), text('leads', n));
    // Six addresses at six domains, but two inboxes: not a campaign.
    const bystander = await newOwner();
    const notYet = await settled(await submit(bystander.key, text('leads', 6)));
    expect(notYet.email_status).toBe('sent');
    expect(symbols(notYet)).not.toContain('FORM_CAMPAIGN');
    // A third inbox makes one; at Apple, its other name is its owner's own mailbox.
    await receiveAndMarkSpam(await newOwner('k@me.com'), text('leads', 7));
    const held = await settled(await submit(bystander.key, text('leads', 8)));
    expect(held.email_status).toBe('spam');
    expect(held.spam.reasons[0].description).toBe('near-identical to messages marked spam by the owners of 3 other mailboxes');
    const own = await settled(await submit((await newOwner('k@mac.com')).key, text('leads', 9)));
    expect(own.email_status).toBe('spam');
    expect(own.spam.reasons[0].description).toBe("near-identical to messages marked spam by this key's owner and the owners of 2 other mailboxes");
  });

  it('the mailboxes of one domain and its subdomains are one voice: a campaign needs 3 domains', async () => {
    for (const [n, email] of ['sales@acme-shop.example', 'info@acme-shop.example', 'jo@mail.acme-shop.example', 'ann@acme-shop.example'].entries()) {
      await receiveAndMarkSpam(await newOwner(email), text('domains', n));
    }
    const bystander = await newOwner();
    const notYet = await settled(await submit(bystander.key, text('domains', 4)));
    expect(notYet.email_status).toBe('sent');
    expect(symbols(notYet)).not.toContain('FORM_CAMPAIGN');
    // Two more domains make it one.
    await receiveAndMarkSpam(await newOwner('bo@bakery.example'), text('domains', 5));
    expect((await settled(await submit(bystander.key, text('domains', 6)))).email_status).toBe('sent');
    await receiveAndMarkSpam(await newOwner('cy@florist.example.co.uk'), text('domains', 7));
    const held = await settled(await submit(bystander.key, text('domains', 8)));
    expect(held.email_status).toBe('spam');
    expect(held.spam.reasons[0].description).toBe('near-identical to messages marked spam by the owners of 6 other mailboxes');
  });

  it('does not hold an unrelated message, nor one that shares only a sentence with the campaign', async () => {
    const markers = [await newOwner(), await newOwner(), await newOwner()];
    for (const [n, owner] of markers.entries()) await receiveAndMarkSpam(owner, text('solar', n));
    const other = await newOwner();
    expect((await settled(await submit(other.key, text('solar', 3)))).email_status).toBe('spam');

    const unrelated = await settled(await submit(other.key, AUDIT_QUESTION));
    expect(unrelated.email_status).toBe('sent');
    expect(symbols(unrelated)).not.toContain('FORM_CAMPAIGN');
    const quoting = `${text('solar', 4).split('. ')[0]}. ${AUDIT_QUESTION}`;
    const quoted = await settled(await submit(other.key, quoting));
    expect(quoted.email_status).toBe('sent');
    expect(symbols(quoted)).not.toContain('FORM_CAMPAIGN');
  });

  it("one owner marking a text 50 times, from several keys and spellings of one mailbox, is one mailbox's vote", async () => {
    // a.b@gmail.com, ab+x@googlemail.com and a.b+forms@gmail.com are one inbox.
    const spellings = ['a.b@gmail.com', 'ab+x@googlemail.com', 'a.b+forms@gmail.com'];
    const owners = [];
    for (const email of spellings) owners.push(await newOwner(email));
    const secondKey = await h.createKey({ email: spellings[0] });
    const keys = [...owners.map((owner) => ({ owner, key: owner.key })), { owner: owners[0]!, key: secondKey }];
    for (let n = 0; n < 50; n += 1) {
      const { owner, key } = keys[n % keys.length]!;
      await receiveAndMarkSpam(owner, text('loans', n), key);
    }
    const bystander = await newOwner();
    const notYet = await settled(await submit(bystander.key, text('loans', 50)));
    expect(notYet.email_status).toBe('sent');
    expect(symbols(notYet)).not.toContain('FORM_CAMPAIGN');

    // With another owner's mark, two mailboxes: still not a campaign.
    await receiveAndMarkSpam(await newOwner(), text('loans', 51));
    expect((await settled(await submit(bystander.key, text('loans', 52)))).email_status).toBe('sent');
    // A third mailbox makes one: the 50 marks counted once, not never.
    await receiveAndMarkSpam(await newOwner(), text('loans', 53));
    const held = await settled(await submit(bystander.key, text('loans', 54)));
    expect(held.email_status).toBe('spam');
    expect(held.spam.reasons[0].description).toBe('near-identical to messages marked spam by the owners of 3 other mailboxes');
  });

  it("takes a mailbox's vote back when its mark is reversed to not spam", async () => {
    const markers = [await newOwner(), await newOwner(), await newOwner()];
    const markedIds = [];
    for (const [n, owner] of markers.entries()) markedIds.push(await receiveAndMarkSpam(owner, text('design', n)));
    const other = await newOwner();
    expect((await settled(await submit(other.key, text('design', 3)))).email_status).toBe('spam');

    const reversed = await mark(markers[2]!, markedIds[2]!, 'ham');
    expect(reversed.submission.spam.mark).toBe('ham');
    const after = await settled(await submit(other.key, text('design', 4)));
    expect(after.email_status).toBe('sent');
    expect(symbols(after)).not.toContain('FORM_CAMPAIGN');
    // Marked spam again, it votes again.
    await mark(markers[2]!, markedIds[2]!, 'spam');
    expect((await settled(await submit(other.key, text('design', 5)))).email_status).toBe('spam');
  });

  it('an owner who says a held campaign message is not spam keeps getting that text; others do not', async () => {
    const markers = [await newOwner(), await newOwner(), await newOwner()];
    for (const [n, owner] of markers.entries()) await receiveAndMarkSpam(owner, text('apps', n));
    const [keeping, other] = [await newOwner(), await newOwner()];
    const heldId = await submit(keeping.key, text('apps', 3));
    expect((await settled(heldId)).email_status).toBe('spam');

    expect(await mark(keeping, heldId, 'ham')).toMatchObject({ released: true });
    expect((await settled(heldId)).email_status).toBe('sent');
    const next = await settled(await submit(keeping.key, text('apps', 4)));
    expect(next.email_status).toBe('sent');
    expect(symbols(next)).not.toContain('FORM_CAMPAIGN');
    expect((await settled(await submit(other.key, text('apps', 5)))).email_status).toBe('spam');
  });

  it("leaves the filter's verdict when the campaign check fails: nothing is lost", async () => {
    const key = await h.createKey();
    // Owner's marks of their own, so that rspamd holds what is like their spam (one mailbox: no campaign).
    const seeds = Array.from({ length: 8 }, (_, n) => 300 + n);
    await teachByMarks(h, key, await signIn(h, key.email), {
      spam: seeds.map((seed) => formMessage('spam', seed).message),
      ham: seeds.map((seed) => formMessage('ham', seed).message),
    });
    await h.sql('alter table spam_campaign_votes rename to spam_campaign_votes_away');
    try {
      const question = await settled(await submit(key, `${AUDIT_QUESTION} We open at seven.`));
      expect(question.email_status).toBe('sent');
      expect(question.spam.verdict).toBe('ham');
      const like = await settled(await submit(key, formMessage('spam', 399).message));
      expect(like.email_status).toBe('spam');
      expect(symbols(like)).toEqual(expect.arrayContaining(['BAYES_OWNER_SPAM']));
      expect(symbols(like)).not.toContain('FORM_CAMPAIGN');
    } finally {
      await h.sql('alter table spam_campaign_votes_away rename to spam_campaign_votes');
    }
  });

  // Last: it stops rspamd.
  it('holds a campaign while rspamd is down, and sends anything else unchecked', async () => {
    const markers = [await newOwner(), await newOwner(), await newOwner()];
    for (const [n, owner] of markers.entries()) await receiveAndMarkSpam(owner, text('reviews', n));
    const other = await h.createKey();
    await filter.stop();
    filterStopped = true;

    const held = await settled(await submit(other, text('reviews', 3)));
    expect(held.email_status).toBe('spam');
    expect(held.spam).toMatchObject({ verdict: 'spam', score: 10, reasons: [{ symbol: 'FORM_CAMPAIGN', score: 10 }] });
    const question = await settled(await submit(other, AUDIT_QUESTION));
    expect(question.email_status).toBe('sent');
    expect(question.spam.verdict).toBe('unchecked');
  });
});
