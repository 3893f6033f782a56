// More recipients per key, through the real API, worker, spam filter (rspamd), bounce receiver and
// SMTP sink: adding and removing them (at most 5), the consent of each added address (nothing but
// one bounded request to confirm until it does, its copies held until then), each copy a delivery
// of its own (its own return path, bounce, complaint and re-send, never touching the owner's email
// or another copy), a confirmation at the moment the copies are made, and the reconciler sending a
// copy whose job Redis lost.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BounceProcess } from '../../src/bounces/process.ts';
import type { RspamdService } from '../../src/local/rspamd.ts';
import { inTransaction } from '../../src/shared/infra/db/transactions.ts';
import { confirmRecipient } from '../../src/shared/recipients/recipients.ts';
import { createCopies } from '../../src/shared/deliveries/deliveries.ts';
import { abuseReport, dsn } from '../../tools/sample-reports.ts';
import { adminRequest, submitJson } from '../support/client.ts';
import { ago, buildKeyRecipient, buildRecipient, buildRecipientCopy, buildSubmission, type KeyRow } from '../support/factories.ts';
import { eventually, startHarness, type Harness } from '../support/harness.ts';
import { request } from '../support/http.ts';
import { signIn } from '../support/owner.ts';
import { sendRaw } from '../support/smtp-client.ts';
import type { ReceivedMail } from '../support/smtp-sink.ts';
import { formMessage, spamFilterEnv, startSpamFilter } from '../support/spam-filter.ts';
import { mailSettled } from '../support/rows.ts';

const TOKEN = 'recipients-test-admin-token-0123456789';
const DOMAIN = 'bounces.test';
const CONFIRM_SUBJECT = 'Confirm to receive copies of a contact form’s messages';

let filter: RspamdService;
let h: Harness;
let receiver: BounceProcess;

beforeAll(async () => {
  filter = await startSpamFilter();
  h = await startHarness({
    env: {
      ...spamFilterEnv(filter),
      ADMIN_TOKEN: TOKEN,
      BOUNCE_DOMAIN: DOMAIN,
      // Every message to a key at the strict level is held as spam; the normal level lets ordinary mail through.
      SPAM_SCORE_STRICT: '-1000',
      // The reconciler looks every second for rows whose job is missing.
      RECONCILE_INTERVAL_MS: '1000',
      RECONCILE_AFTER_MS: '1000',
      // The per-hour cap of key emails to one mailbox as in production: the confirmation requests count in it.
      KEY_EMAILS_PER_HOUR: '15',
    },
  });
  receiver = await h.startBounces();
}, 90_000);
afterAll(async () => {
  await h?.stop();
  await filter?.stop();
});

const admin = (method: string, path: string, body?: unknown) => adminRequest(h, TOKEN, method, path, body);

/** A key whose own address confirmed it wants its messages. */
async function confirmedKey(): Promise<KeyRow> {
  const key = await h.createKey();
  await buildRecipient(h, { mailbox: key.mailbox });
  return key;
}

let seed = 0;
/** A visitor's message in the words of ordinary business mail (ham at the normal level); its id. */
async function submit(key: KeyRow, visitor = 'visitor@visitors.example'): Promise<string> {
  const ham = formMessage('ham', (seed += 1));
  const response = await submitJson(h, { access_key: key.key, email: visitor, subject: ham.subject, message: ham.message });
  expect(response.status).toBe(200);
  return response.json.submission_id as string;
}

const record = async (id: string) => (await admin('GET', `/admin/submissions/${id}`)).json;
/** The admin record once the owner's email and every copy have stopped moving. */
const settled = (id: string, copies: number) =>
  eventually(
    async () => {
      const found = await record(id);
      const moving = (status: string) => ['queued', 'sending', 'retrying'].includes(status);
      return !moving(found.email_status) && found.copies.length === copies && !found.copies.some((copy: { email_status: string }) => moving(copy.email_status))
        ? found
        : undefined;
    },
    30_000,
    `submission ${id} and its ${copies} copies settled`,
  );

const mailsTo = (address: string) => h.sink.messages.filter((mail) => mail.envelope.to.includes(address));
const requestsTo = (address: string) => mailsTo(address).filter((mail) => mail.parsed.subject === CONFIRM_SUBJECT);
const copiesTo = (address: string) => mailsTo(address).filter((mail) => mail.parsed.subject !== CONFIRM_SUBJECT);

/** The confirmation link in a request (or a copy), moved to the API's real origin. */
function linkIn(mail: ReceivedMail): URL {
  const match = /(https?:\/\/\S+\/confirm\?recipient=[\w-]+&token=[\w-]+)/.exec(mail.parsed.text ?? '');
  if (!match) throw new Error(`no recipient link in:\n${mail.parsed.text}`);
  const link = new URL(match[1]!);
  return new URL(`${link.pathname}${link.search}`, h.url);
}

/** Presses a button of the link's page: the form posts recipient, token and action. */
const answer = (link: URL, action: 'confirm' | 'remove') =>
  request(`${h.url}/confirm`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: h.url },
    body: new URLSearchParams({ recipient: link.searchParams.get('recipient') ?? '', token: link.searchParams.get('token') ?? '', action }).toString(),
  });

describe('adding and removing recipients', () => {
  it("adds up to 5 through the owner API, each asked once to confirm; a 6th is refused in the spec's error shape and changes nothing; a removed one is gone", async () => {
    const key = await confirmedKey();
    const owner = await signIn(h, key.email);
    // The owner's words reach no stranger: the request names the owner's address only.
    expect((await owner.api('PATCH', `/keys/${key.id}`, { label: 'Call 555-0100 for a refund' })).status).toBe(200);
    const five = ['ana@team.example', 'Bob@Team.example', 'carla@team.example', 'dan@team.example', 'eve@team.example'];
    const added = await owner.api('PATCH', `/keys/${key.id}`, { recipients: five });
    expect(added.status).toBe(200);
    const body = JSON.parse(added.text);
    expect(body.recipients.map((recipient: { email: string; confirmed: boolean }) => [recipient.email, recipient.confirmed])).toEqual(
      five.map((email) => [email.toLowerCase(), false]),
    );
    for (const address of five.map((email) => email.toLowerCase())) {
      const [mail] = await eventually(async () => (requestsTo(address).length ? requestsTo(address) : undefined), 20_000, `request to ${address}`);
      expect(mail!.parsed.text).toContain(`${key.email} added ${address} to the recipients of their contact form`);
      expect(mail!.raw.toString('utf8')).not.toContain('555-0100');
    }

    const sixth = await owner.api('PATCH', `/keys/${key.id}`, { recipients: [...five, 'frank@team.example'], label: 'Renamed' });
    expect(sixth.status).toBe(400);
    expect(JSON.parse(sixth.text)).toEqual({
      success: false,
      message: 'Invalid fields.',
      errors: { __all__: ['Invalid fields.'], recipients: ['At most 5 more recipients per key, besides its own address.'] },
    });
    const own = await owner.api('PATCH', `/keys/${key.id}`, { recipients: [key.email.toUpperCase()] });
    expect(own.status).toBe(400);
    expect(JSON.parse(own.text).errors.recipients).toEqual([`${key.email} is the key's own address: it receives every message already.`]);
    const garbage = await owner.api('PATCH', `/keys/${key.id}`, { recipients: ['not an address'] });
    expect(garbage.status).toBe(400);
    expect(JSON.parse(garbage.text).errors.recipients).toEqual(['Not an email address: "not an address".']);
    const keys = JSON.parse((await owner.api('GET', '/keys')).text).keys;
    expect(keys[0].label).toBe('Call 555-0100 for a refund');
    expect(keys[0].recipients).toHaveLength(5);

    const kept = await owner.api('PATCH', `/keys/${key.id}`, { recipients: five.slice(0, 4) });
    expect(kept.status).toBe(200);
    expect(JSON.parse(kept.text).recipients.map((recipient: { email: string }) => recipient.email)).toEqual(
      five.slice(0, 4).map((email) => email.toLowerCase()),
    );
    await mailSettled(h);
    // Kept ones are not asked again.
    for (const address of five.map((email) => email.toLowerCase())) expect(requestsTo(address)).toHaveLength(1);
    // The admin API sees and sets the same list.
    const listed = await admin('GET', `/admin/keys?email=${encodeURIComponent(key.email)}`);
    expect(listed.json.keys[0].recipients).toHaveLength(4);
    const cleared = await admin('PATCH', `/admin/keys/${key.key}`, { recipients: [] });
    expect(cleared.status).toBe(200);
    expect(cleared.json.recipients).toEqual([]);
  });
});

describe('the consent of an added address', () => {
  it('mails it nothing but one request until it confirms; its copies wait, held, and go out when it confirms through the link', async () => {
    const key = await confirmedKey();
    const colleague = 'colleague@team.example';
    expect((await admin('PATCH', `/admin/keys/${key.key}`, { recipients: [colleague] })).status).toBe(200);
    const ids = [await submit(key), await submit(key), await submit(key)];
    for (const id of ids) {
      const found = await settled(id, 1);
      expect(found.email_status).toBe('sent');
      expect(found.copies).toMatchObject([{ email: colleague, email_status: 'held', resendable: false }]);
    }
    const asked = await eventually(async () => requestsTo(colleague)[0], 20_000, 'the request to confirm');
    await mailSettled(h);
    expect(mailsTo(colleague)).toHaveLength(1);

    // Opening the link changes nothing: mail scanners fetch links.
    const link = linkIn(asked);
    const page = await request(link.toString());
    expect(page.status).toBe(200);
    expect(page.text).toContain(key.email);
    expect(page.text).toContain(`Yes, send the copies to ${colleague}`);
    expect((await record(ids[0]!)).copies[0].email_status).toBe('held');

    const confirmed = await answer(link, 'confirm');
    expect(confirmed.status).toBe(200);
    expect(confirmed.text).toContain('3 waiting copies are on the way.');
    const copies = await eventually(async () => (copiesTo(colleague).length === 3 ? copiesTo(colleague) : undefined), 30_000, 'the three copies');
    for (const copy of copies) {
      expect(copy.parsed.replyTo?.value[0]?.address).toBe('visitor@visitors.example');
      expect(copy.parsed.from?.value[0]?.address).toBe('forms@example.test');
      expect(copy.envelope.from).toMatch(/^b-c-[0-9a-f]{32}-[0-9a-f]{16}@bounces\.test$/);
      expect(copy.parsed.text).toMatch(new RegExp(`^New submission to the contact form of ${key.email}, copied to you as one of its recipients\\.`));
      // Folded by the composer: the header's name, then its value on the next line.
      expect(copy.raw.toString('utf8')).toMatch(/^List-Unsubscribe:\s+<http:\/\/\S+\/confirm\?recipient=/m);
      // Its stop link is the same page, now offering to stop.
      expect(linkIn(copy).searchParams.get('recipient')).toBe(link.searchParams.get('recipient'));
    }
    for (const id of ids) expect((await settled(id, 1)).copies[0].email_status).toBe('sent');

    // From now on each message is copied at once; the owner still gets each one.
    const later = await settled(await submit(key), 1);
    expect(later.copies[0].email_status).toBe('sent');
    expect(copiesTo(colleague)).toHaveLength(4);
    expect(mailsTo(key.email)).toHaveLength(4);
    const stopPage = await request(link.toString());
    expect(stopPage.text).toContain('Receive no more copies');
  });

  it('asks one address once per key and 3 times across all keys in 24 hours: past that the change is refused with 429 and stores nothing', async () => {
    const stranger = 'stranger@elsewhere.example';
    const keys = [await confirmedKey(), await confirmedKey(), await confirmedKey(), await confirmedKey()];
    for (const key of keys.slice(0, 3)) expect((await admin('PATCH', `/admin/keys/${key.key}`, { recipients: [stranger] })).status).toBe(200);
    const fourth = await admin('PATCH', `/admin/keys/${keys[3]!.key}`, { recipients: [stranger], label: 'Not saved either' });
    expect(fourth.status).toBe(429);
    expect(Number(fourth.headers.get('retry-after'))).toBeGreaterThan(86_000);
    const message = `${stranger} has been asked to confirm 3 times in the last 24 hours; it can be added once that day is over.`;
    expect(fourth.json).toEqual({ success: false, message, errors: { recipients: [message], __all__: [message] } });
    const unchanged = (await admin('GET', `/admin/keys?email=${encodeURIComponent(keys[3]!.email)}`)).json.keys[0];
    expect(unchanged).toMatchObject({ label: null, recipients: [] });

    // Removed and added again the same day: not asked again, for this key either.
    expect((await admin('PATCH', `/admin/keys/${keys[0]!.key}`, { recipients: [] })).status).toBe(200);
    const again = await admin('PATCH', `/admin/keys/${keys[0]!.key}`, { recipients: ['Stranger+forms@elsewhere.example'] });
    expect(again.status).toBe(429);
    expect(again.json.errors.recipients).toEqual([
      'stranger+forms@elsewhere.example was asked to confirm for this key in the last 24 hours; it can be added again once that day is over.',
    ]);

    await eventually(async () => (requestsTo(stranger).length === 3 ? true : undefined), 20_000, 'three requests');
    await mailSettled(h);
    expect(mailsTo(stranger)).toHaveLength(3);
    expect(mailsTo('stranger+forms@elsewhere.example')).toHaveLength(0);
    const [counted] = await h.sql<{ n: number }>("select count(*)::int as n from key_emails where kind = 'recipient-confirm' and mailbox = $1", [stranger]);
    expect(counted!.n).toBe(3);
  });

  it('lets the address remove itself through its link: nothing more goes to it, and its held copies are gone', async () => {
    const key = await confirmedKey();
    const unwilling = 'unwilling@team.example';
    expect((await admin('PATCH', `/admin/keys/${key.key}`, { recipients: [unwilling] })).status).toBe(200);
    const id = await submit(key);
    expect((await settled(id, 1)).copies[0].email_status).toBe('held');
    const mail = await eventually(async () => requestsTo(unwilling)[0], 20_000, 'the request');
    const removed = await answer(linkIn(mail), 'remove');
    expect(removed.status).toBe(200);
    expect(removed.text).toContain('is no longer one of the recipients');
    expect((await record(id)).copies).toEqual([]);
    expect((await admin('GET', `/admin/keys?email=${encodeURIComponent(key.email)}`)).json.keys[0].recipients).toEqual([]);
    // Its link now leads nowhere, and confirming through it is refused.
    expect((await answer(linkIn(mail), 'confirm')).status).toBe(400);
    expect((await settled(await submit(key), 0)).email_status).toBe('sent');
    await mailSettled(h);
    expect(mailsTo(unwilling)).toHaveLength(1);
  });

  it("lets a mail client's one-click unsubscribe (RFC 8058) stop the copies: a POST to the copy's List-Unsubscribe link removes the address", async () => {
    const key = await confirmedKey();
    const reader = 'one-click@team.example';
    expect((await admin('PATCH', `/admin/keys/${key.key}`, { recipients: [reader] })).status).toBe(200);
    const asked = await eventually(async () => requestsTo(reader)[0], 20_000, 'the request');
    expect((await answer(linkIn(asked), 'confirm')).status).toBe(200);
    const first = await settled(await submit(key), 1);
    expect(first.copies[0].email_status).toBe('sent');
    const copy = await eventually(async () => copiesTo(reader)[0], 20_000, 'the copy');
    // Unfolded: the composer folds a long header onto the next line.
    const headers = copy.raw
      .toString('utf8')
      .split(/\r?\n\r?\n/)[0]!
      .replace(/\r?\n[ \t]+/g, ' ');
    expect(headers).toMatch(/^List-Unsubscribe-Post: List-Unsubscribe=One-Click$/m);
    const listed = /^List-Unsubscribe: <(\S+)>$/m.exec(headers)?.[1];
    expect(listed).toBeDefined();
    const target = new URL(listed!);

    // What a mail client sends: the link itself, the RFC's body, no cookie, no origin.
    const oneClick = await request(new URL(`${target.pathname}${target.search}`, h.url).toString(), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'List-Unsubscribe=One-Click',
    });
    expect(oneClick.status).toBe(200);
    expect(oneClick.text).toContain('is no longer one of the recipients');
    expect((await admin('GET', `/admin/keys?email=${encodeURIComponent(key.email)}`)).json.keys[0].recipients).toEqual([]);
    expect((await settled(await submit(key), 0)).email_status).toBe('sent');
    await mailSettled(h);
    expect(copiesTo(reader)).toHaveLength(1);

    // A forged token is refused and removes nothing.
    const other = await confirmedKey();
    expect((await admin('PATCH', `/admin/keys/${other.key}`, { recipients: [reader] })).status).toBe(200);
    const request2 = await eventually(async () => (requestsTo(reader).length === 2 ? requestsTo(reader)[1] : undefined), 20_000, 'the second request');
    const forged = linkIn(request2);
    forged.searchParams.set('token', 'A'.repeat(43));
    const refused = await request(forged.toString(), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'List-Unsubscribe=One-Click',
    });
    expect(refused.status).toBe(400);
    expect((await admin('GET', `/admin/keys?email=${encodeURIComponent(other.email)}`)).json.keys[0].recipients).toHaveLength(1);

    // The RFC's preferred body, multipart/form-data, does the same.
    const multipart = (value: string) =>
      request(linkIn(request2).toString(), {
        method: 'POST',
        headers: { 'content-type': 'multipart/form-data; boundary=one-click' },
        body: `--one-click\r\nContent-Disposition: form-data; name="List-Unsubscribe"\r\n\r\n${value}\r\n--one-click--\r\n`,
      });
    expect((await multipart('Something-Else')).status).toBe(400);
    expect((await admin('GET', `/admin/keys?email=${encodeURIComponent(other.email)}`)).json.keys[0].recipients).toHaveLength(1);
    const removed = await multipart('One-Click');
    expect(removed.status).toBe(200);
    expect((await admin('GET', `/admin/keys?email=${encodeURIComponent(other.email)}`)).json.keys[0].recipients).toEqual([]);
  });

  it('refuses a forged link: another recipient id under the token, or a changed token', async () => {
    const key = await confirmedKey();
    expect((await admin('PATCH', `/admin/keys/${key.key}`, { recipients: ['one@team.example', 'two@team.example'] })).status).toBe(200);
    const [one, two] = [await eventually(async () => requestsTo('one@team.example')[0]), await eventually(async () => requestsTo('two@team.example')[0])];
    const [first, second] = [linkIn(one), linkIn(two)];
    const forged = new URL(first);
    forged.searchParams.set('recipient', second.searchParams.get('recipient')!);
    expect((await request(forged.toString())).status).toBe(400);
    expect((await answer(forged, 'confirm')).status).toBe(400);
    const changed = new URL(first);
    // Its first character changed: the last one may carry only padding bits, or already be the new one.
    const token = first.searchParams.get('token')!;
    changed.searchParams.set('token', `${token.startsWith('A') ? 'B' : 'A'}${token.slice(1)}`);
    expect((await answer(changed, 'confirm')).status).toBe(400);
    const recipients = (await admin('GET', `/admin/keys?email=${encodeURIComponent(key.email)}`)).json.keys[0].recipients;
    expect(recipients.map((recipient: { confirmed: boolean }) => recipient.confirmed)).toEqual([false, false]);
  });
});

describe('each copy on its own', () => {
  /** A key with two confirmed recipients, and a message delivered to the owner and both. */
  async function copied(): Promise<{ key: KeyRow; id: string; first: ReceivedMail; second: ReceivedMail; a: string; b: string; record: any }> {
    const key = await confirmedKey();
    const a = `a-${(seed += 1)}@team.example`;
    const b = `b-${seed}@team.example`;
    await buildKeyRecipient(h, { key, email: a });
    await buildKeyRecipient(h, { key, email: b });
    const id = await submit(key);
    const found = await settled(id, 2);
    expect([found.email_status, ...found.copies.map((copy: { email_status: string }) => copy.email_status)]).toEqual(['sent', 'sent', 'sent']);
    return { key, id, first: copiesTo(a)[0]!, second: copiesTo(b)[0]!, a, b, record: found };
  }
  const copyOf = (found: any, email: string) => found.copies.find((copy: { email: string }) => copy.email === email);

  it("a hard bounce comes back through the copy's own return path to that copy alone: the owner's email and the other copy are as they were", async () => {
    const { id, first, a, b } = await copied();
    const reply = await sendRaw(receiver.port, { from: '', to: [first.envelope.from] }, dsn({ to: first.envelope.from }));
    expect(reply.data?.code).toBe(250);
    const found = await record(id);
    expect(copyOf(found, a)).toMatchObject({ email_status: 'bounced', bounce: { type: 'hard', status: '5.1.1' }, resendable: true });
    expect(copyOf(found, b)).toMatchObject({ email_status: 'sent', bounce: null });
    expect(found.email_status).toBe('sent');
    expect(found.bounce).toBeNull();
    const bounced = await h.sql<{ address: string; hard_bounces: number }>('select address, hard_bounces from address_bounces where address = any($1)', [
      [a, b, found.recipient],
    ]);
    expect(bounced).toEqual([{ address: a, hard_bounces: 1 }]);
  });

  it('a complaint of one copy suppresses that address only: the next message reaches the owner and the other recipient', async () => {
    const { key, id, second, a, b } = await copied();
    const reply = await sendRaw(receiver.port, { from: '', to: [second.envelope.from] }, abuseReport(second.envelope.from));
    expect(reply.data?.code).toBe(250);
    const found = await record(id);
    expect(copyOf(found, b).email_status).toBe('complained');
    expect(copyOf(found, a).email_status).toBe('sent');
    expect(found.email_status).toBe('sent');
    const next = await settled(await submit(key), 2);
    expect(next.email_status).toBe('sent');
    expect(copyOf(next, a).email_status).toBe('sent');
    expect(copyOf(next, b)).toMatchObject({ email_status: 'suppressed', last_error: expect.stringContaining('reported an email of this service as spam') });
    expect(copiesTo(b)).toHaveLength(1);
  });

  it("re-sends one recipient's copy through the owner API: only that address gets it again; a sent copy is refused with 409", async () => {
    const { key, id, first, a, b } = await copied();
    await sendRaw(receiver.port, { from: '', to: [first.envelope.from] }, dsn({ to: first.envelope.from }));
    const owner = await signIn(h, key.email);
    const bouncedCopy = copyOf(await record(id), a);
    expect(bouncedCopy.email_status).toBe('bounced');
    // The console's page lists both copies, with a re-send button only where it applies.
    const page = await owner.get(`/owner/submissions/${id}`);
    expect(page.text).toContain('Copies to more recipients');
    expect(page.text).toContain(`aria-label="Re-send this copy to ${a}"`);
    expect(page.text).not.toContain(`aria-label="Re-send this copy to ${b}"`);
    const resent = await owner.api('POST', `/submissions/${id}/copies/${bouncedCopy.copy_id}/resend`);
    expect(resent.status).toBe(200);
    expect(copyOf(JSON.parse(resent.text), a)).toMatchObject({ email_status: expect.stringMatching(/queued|sending|sent/), bounce: null });
    await eventually(async () => (copiesTo(a).length === 2 ? true : undefined), 20_000, 'the copy sent again');
    const found = await settled(id, 2);
    expect(copyOf(found, a).email_status).toBe('sent');
    await mailSettled(h);
    expect(copiesTo(b)).toHaveLength(1);
    expect(mailsTo(key.email).filter((mail) => mail.parsed.subject !== 'Sign in to your contact form keys')).toHaveLength(1);

    const sent = await owner.api('POST', `/submissions/${id}/copies/${copyOf(found, b).copy_id}/resend`);
    expect(sent.status).toBe(409);
    expect(JSON.parse(sent.text)).toEqual({
      success: false,
      message: 'Only a failed, bounced or suppressed copy can be re-sent; this one is sent.',
      errors: { __all__: ['Only a failed, bounced or suppressed copy can be re-sent; this one is sent.'] },
    });
    // A copy of another message, or none at all: not found.
    expect((await owner.api('POST', `/submissions/${id}/copies/${crypto.randomUUID()}/resend`)).status).toBe(404);
  });

  it("the owner's own suppressed address stops the owner's email, not the copies", async () => {
    const key = await confirmedKey();
    await h.sql(`insert into address_bounces (address, hard_bounces, last_bounced_at, suppressed_until) values ($1, 3, now(), now() + interval '1 day')`, [
      key.email,
    ]);
    const colleague = `suppressed-owner-${(seed += 1)}@team.example`;
    await buildKeyRecipient(h, { key, email: colleague });
    const found = await settled(await submit(key), 1);
    expect(found.email_status).toBe('suppressed');
    expect(found.copies[0].email_status).toBe('sent');
    expect(copiesTo(colleague)).toHaveLength(1);
  });

  it('makes no copy of a message held as spam; the owner\'s "not spam" sends it to the owner and the copies', async () => {
    const key = await confirmedKey();
    expect((await admin('PATCH', `/admin/keys/${key.key}`, { spam_filter: 'strict' })).status).toBe(200);
    const colleague = `spam-${(seed += 1)}@team.example`;
    await buildKeyRecipient(h, { key, email: colleague });
    const id = await submit(key);
    const held = await settled(id, 0);
    expect(held.email_status).toBe('spam');
    expect(held.copies).toEqual([]);
    await mailSettled(h);
    expect(copiesTo(colleague)).toHaveLength(0);

    const owner = await signIn(h, key.email);
    expect((await owner.api('POST', `/submissions/${id}/spam-mark`, { mark: 'ham' })).status).toBe(200);
    const released = await settled(id, 1);
    expect(released.email_status).toBe('sent');
    expect(released.copies[0].email_status).toBe('sent');
    expect(copiesTo(colleague)).toHaveLength(1);
  });
});

describe('a confirmation at the moment the copies are made', () => {
  /** A statement of this file's database is waiting for a lock another transaction holds. */
  const waitingOnLock = async () =>
    (await h.sql("select pid from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'")).length > 0;
  const deferred = () => {
    let open!: () => void;
    const promise = new Promise<void>((resolve) => (open = resolve));
    return { promise, open };
  };

  it('made while the confirmation is uncommitted: they wait for it, then are made queued', async () => {
    const key = await confirmedKey();
    const recipient = await buildKeyRecipient(h, { key, confirmed: false });
    const submission = await buildSubmission(h, { key, status: 'sent' });
    const committed = deferred();
    const locked = deferred();
    const confirming = inTransaction(h.orm.em.fork(), async (tx) => {
      await tx.execute('update key_recipients set confirmed_at = now() where id = ?', [recipient.id]);
      locked.open();
      await committed.promise;
    });
    // The update holds its lock before the copies are made.
    await locked.promise;
    let made: Array<{ status: string }> | undefined;
    const making = createCopies(h.orm.em.fork(), submission.id).then((copies) => (made = copies));
    await eventually(async () => (made !== undefined || (await waitingOnLock()) ? true : undefined), 20_000, 'the copies made or waiting on the lock');
    expect(made).toBeUndefined();
    committed.open();
    await confirming;
    await making;
    expect(made!.map((copy) => copy.status)).toEqual(['queued']);
  });

  it('made in a transaction the confirmation has to wait for: the confirmation releases them', async () => {
    const key = await confirmedKey();
    const recipient = await buildKeyRecipient(h, { key, confirmed: false });
    const submission = await buildSubmission(h, { key, status: 'sent' });
    const committed = deferred();
    let made: Array<{ id: string; status: string }> = [];
    const making = inTransaction(h.orm.em.fork(), async (tx) => {
      made = await createCopies(tx, submission.id);
      await committed.promise;
    });
    await eventually(async () => (made.length ? true : undefined));
    expect(made.map((copy) => copy.status)).toEqual(['held']);
    let released: string[] | undefined;
    const confirming = confirmRecipient(h.orm.em.fork(), recipient.id).then((ids) => (released = ids));
    await eventually(
      async () => (released !== undefined || (await waitingOnLock()) ? true : undefined),
      20_000,
      'the confirmation done or waiting on the lock',
    );
    expect(released).toBeUndefined();
    committed.open();
    await making;
    await confirming;
    expect(released).toEqual([made[0]!.id]);
  });
});

describe('the reconciler', () => {
  it('sends a queued copy whose job Redis lost', async () => {
    const key = await confirmedKey();
    const colleague = `reconciled-${(seed += 1)}@team.example`;
    const recipient = await buildKeyRecipient(h, { key, email: colleague });
    const submission = await buildSubmission(h, { key, status: 'sent', createdAt: ago({ minutes: 1 }) });
    // The row the worker makes, without the job it adds after the owner's email.
    const copy = await buildRecipientCopy(h, { submission, recipient, status: 'queued', createdAt: ago({ minutes: 1 }) });
    const found = await eventually(
      async () => {
        const [row] = await h.sql<{ email_status: string }>('select email_status from recipient_copies where id = $1', [copy.id]);
        return row?.email_status === 'sent' ? row : undefined;
      },
      30_000,
      'the copy sent',
    );
    expect(found.email_status).toBe('sent');
    expect(copiesTo(colleague)).toHaveLength(1);
  });

  it('does not send a copy made for an address the owner removed since: it is suppressed, saying why', async () => {
    const key = await confirmedKey();
    const colleague = `removed-${(seed += 1)}@team.example`;
    const recipient = await buildKeyRecipient(h, { key, email: colleague });
    const submission = await buildSubmission(h, { key, status: 'sent', createdAt: ago({ minutes: 1 }) });
    const copy = await buildRecipientCopy(h, { submission, recipient, status: 'queued', createdAt: ago({ minutes: 1 }) });
    await h.sql('delete from key_recipients where id = $1', [recipient.id]);
    const found = await eventually(async () => {
      const [row] = await h.sql<{ email_status: string; last_error: string | null }>('select email_status, last_error from recipient_copies where id = $1', [
        copy.id,
      ]);
      return row?.email_status === 'suppressed' ? row : undefined;
    }, 30_000);
    expect(found.last_error).toBe("not attempted: this address is no longer one of the key's recipients");
    expect(mailsTo(colleague)).toHaveLength(0);
  });
});
