// The autoresponse (the confirmation email to the visitor), through the real API, worker, spam
// filter (rspamd), bounce receiver and SMTP sink: what the visitor receives, when nothing is sent
// and why, the 24-hour bounds counted per visitor mailbox, per key and per owner, the owner's
// words checked as mail, that the owner's own email never depends on it, and that the reconciler
// makes the copies and the autoresponse of a submission a worker of the previous release sent. A stand-in for
// hCaptcha's verify endpoint answers the captcha the autoresponse needs.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BounceProcess } from '../../src/bounces/process.ts';
import type { RspamdService } from '../../src/local/rspamd.ts';
import { createDeliveryQueue } from '../../src/shared/infra/queues/queues.ts';
import { submissionJob, type DeliveryJob } from '../../src/shared/deliveries/delivery-jobs.ts';
import { dsn } from '../../tools/sample-reports.ts';
import { adminRequest, submitJson } from '../support/client.ts';
import { ago, buildKeyRecipient, buildRecipient, buildSubmission, type KeyRow } from '../support/factories.ts';
import { eventually, startHarness, type Harness } from '../support/harness.ts';
import { signIn } from '../support/owner.ts';
import { sendRaw } from '../support/smtp-client.ts';
import { formMessage, spamFilterEnv, startSpamFilter } from '../support/spam-filter.ts';
import { runReconciler } from '../support/reconciler.ts';
import { mailSettled } from '../support/rows.ts';

const TOKEN = 'autoresponse-test-admin-token-0123456789';
const DOMAIN = 'bounces.test';
const SUBJECT = 'We have your message';
const OWNER_TEXT = 'Thank you for writing to us.\nWe answer within two working days.\n\nOpening hours: https://shop.example/hours.';
/** The key's own site: the only one its autoresponse may link to. */
const OWNER_DOMAIN = 'shop.example';
const CAPTCHA_FIELD = 'h-captcha-response';
/** What a visitor writes: it must never reach the autoresponse. */
const VISITOR_TEXT = 'zebra quartz lantern 7731';

let filter: RspamdService;
let h: Harness;
let receiver: BounceProcess;
let verifier: Server;

beforeAll(async () => {
  filter = await startSpamFilter();
  // hCaptcha's verify endpoint: the answer 'solved' passes.
  verifier = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ success: new URLSearchParams(body).get('response') === 'solved' }));
    });
  });
  await new Promise<void>((resolve) => verifier.listen(0, '127.0.0.1', resolve));
  h = await startHarness({
    env: {
      ...spamFilterEnv(filter),
      ADMIN_TOKEN: TOKEN,
      BOUNCE_DOMAIN: DOMAIN,
      SUPPRESS_AFTER_HARD_BOUNCES: '1',
      HCAPTCHA_SECRET: 'verify-secret',
      HCAPTCHA_VERIFY_URL: `http://127.0.0.1:${(verifier.address() as AddressInfo).port}/siteverify`,
    },
  });
  receiver = await h.startBounces();
}, 90_000);
afterAll(async () => {
  await h?.stop();
  await filter?.stop();
  await new Promise((resolve) => verifier?.close(resolve));
});

const admin = (method: string, path: string, body?: unknown) => adminRequest(h, TOKEN, method, path, body);

type KeyOptions = {
  confirmed?: boolean;
  spamFilter?: 'off' | 'normal';
  enabled?: boolean;
  /** Whether the key asks a captcha (hCaptcha), and since when: `long` (an hour ago), `now`, or none. */
  captcha?: 'long' | 'now' | 'none';
  email?: string;
};

/** A key whose owner turned the autoresponse on; its mailbox confirmed and its captcha asked for an hour, unless told otherwise. */
async function autorespondingKey(options: KeyOptions = {}): Promise<KeyRow> {
  const key = await h.createKey(options.email ? { email: options.email } : {});
  if (options.confirmed !== false) await buildRecipient(h, { mailbox: key.mailbox });
  const captcha = options.captcha ?? 'long';
  const changed = await admin('PATCH', `/admin/keys/${key.key}`, {
    label: 'Contact page',
    spam_filter: options.spamFilter ?? 'normal',
    domains: [OWNER_DOMAIN],
    use_domain: false,
    captcha: captcha === 'none' ? null : 'hcaptcha',
    autoresponse: { enabled: options.enabled ?? true, subject: SUBJECT, text: OWNER_TEXT },
  });
  expect(changed.status).toBe(200);
  if (captcha === 'long') await h.sql(`update verification_keys set captcha_required_since = now() - interval '1 hour' where id = $1`, [key.id]);
  return key;
}

let seed = 0;
/** A visitor's submission in the words of ordinary business mail (the filter calls it ham), with the visitor's own text everywhere. */
async function submit(key: KeyRow, email: string): Promise<string> {
  const ham = formMessage('ham', (seed += 1));
  const response = await submitJson(h, {
    access_key: key.key,
    email,
    name: VISITOR_TEXT,
    subject: `${ham.subject} ${VISITOR_TEXT}`,
    message: `${ham.message} ${VISITOR_TEXT}`,
    company: VISITOR_TEXT,
    [CAPTCHA_FIELD]: 'solved',
  });
  expect(response.status).toBe(200);
  return response.json.submission_id as string;
}

/** The submission's admin record once its autoresponse is decided and, if one went, settled. */
const decided = (id: string) =>
  eventually(
    async () => {
      const record = (await admin('GET', `/admin/submissions/${id}`)).json;
      return record.autoresponse === null || record.autoresponse === 'pending' ? undefined : record;
    },
    30_000,
    'the autoresponse decided',
  );

const mailsTo = (address: string) => h.sink.messages.filter((mail) => mail.envelope.to.includes(address));
const autoresponsesTo = (address: string) => mailsTo(address).filter((mail) => mail.parsed.headers.get('auto-submitted') === 'auto-replied');

describe('the autoresponse', () => {
  it("sends the visitor the owner's words only: Auto-Submitted, From MAIL_FROM, Reply-To the owner, a return path of its own", async () => {
    const key = await autorespondingKey();
    const visitor = 'ada@visitors.example';
    const id = await submit(key, visitor);
    const record = await decided(id);
    expect(record.autoresponse).toBe('sent');
    expect(record.email_status).toBe('sent');
    expect(record.spam.verdict).toBe('ham');

    const [mail, ...more] = mailsTo(visitor);
    expect(more).toHaveLength(0);
    expect(mail!.parsed.headers.get('auto-submitted')).toBe('auto-replied');
    expect(mail!.parsed.from?.value[0]?.address).toBe('forms@example.test');
    expect(mail!.parsed.replyTo?.value[0]?.address).toBe(key.email);
    expect(mail!.parsed.subject).toBe(SUBJECT);
    expect(mail!.envelope.from).toMatch(/^b-a-[0-9a-f]{32}-[0-9a-f]{16}@bounces\.test$/);
    const text = mail!.parsed.text ?? '';
    expect(text).toContain('Thank you for writing to us.\nWe answer within two working days.\n\nOpening hours: https://shop.example/hours.');
    expect(text).toContain(`through "Contact page" on ${new Date().toISOString().slice(0, 10)} (UTC)`);
    const html = String(mail!.parsed.html);
    expect(html).toContain('<p>Thank you for writing to us.<br>\nWe answer within two working days.</p>');
    expect(html).toContain('<a href="https://shop.example/hours">https://shop.example/hours</a>.');
    // Nothing the visitor wrote, in any part or header: To is the plain address alone.
    expect(mail!.parsed.headers.get('to')).toEqual({ value: [{ address: visitor, name: '' }], html: expect.any(String), text: visitor });
    expect(mail!.raw.toString('utf8')).not.toContain(VISITOR_TEXT);
    expect(mail!.raw.toString('utf8')).not.toContain('zebra');
    // The owner's own email carries it, as before.
    expect(mailsTo(key.email).some((owner) => (owner.parsed.text ?? '').includes(VISITOR_TEXT))).toBe(true);

    const metrics = await admin('GET', '/metrics');
    expect(metrics.text).toMatch(/^cfs_autoresponses_total\{outcome="sent"\} [1-9]/m);
  });

  it("a bounce of it counts against the visitor's address and leaves the submission's own email as it was", async () => {
    const key = await autorespondingKey();
    const visitor = 'gone@visitors.example';
    const id = await submit(key, visitor);
    expect((await decided(id)).autoresponse).toBe('sent');
    const returnPath = autoresponsesTo(visitor)[0]!.envelope.from;
    const reply = await sendRaw(receiver.port, { from: '', to: [returnPath] }, dsn({ to: returnPath }));
    expect(reply.data?.code).toBe(250);

    const [bounces] = await h.sql<{ hard_bounces: number; suppressed: boolean }>(
      'select hard_bounces, suppressed_until > now() as suppressed from address_bounces where address = $1',
      [visitor],
    );
    expect(bounces).toEqual({ hard_bounces: 1, suppressed: true });
    const record = (await admin('GET', `/admin/submissions/${id}`)).json;
    expect(record.email_status).toBe('sent');
    expect(record.bounce).toBeNull();
    // Its next submission gets none: the address is suppressed now.
    expect((await decided(await submit(await autorespondingKey(), visitor))).autoresponse).toBe('suppressed');
  });

  it.each([
    { why: 'off', setup: () => autorespondingKey({ enabled: false }), visitor: 'off@visitors.example' },
    { why: 'not_confirmed', setup: () => autorespondingKey({ confirmed: false }), visitor: 'unconfirmed@visitors.example' },
    { why: 'filter_off', setup: () => autorespondingKey({ spamFilter: 'off' }), visitor: 'unfiltered@visitors.example' },
    { why: 'no_captcha', setup: () => autorespondingKey({ captcha: 'none' }), visitor: 'nocaptcha@visitors.example' },
    // Asked only from now on: a submission of the last minute may have been taken by an API that had not heard yet.
    { why: 'no_captcha', setup: () => autorespondingKey({ captcha: 'now' }), visitor: 'justnow@visitors.example' },
    {
      why: 'operator_off',
      setup: async () => {
        const key = await autorespondingKey();
        expect((await admin('PATCH', `/admin/keys/${key.key}`, { autoresponse_review: 'blocked' })).status).toBe(200);
        return key;
      },
      visitor: 'blocked@visitors.example',
    },
    { why: 'unusual_address', setup: () => autorespondingKey(), visitor: 'x+Account.suspended.call.0800-555-0100.now.to.unlock.it@victims.test' },
    { why: 'unusual_address', setup: () => autorespondingKey(), visitor: 'call.0800.555.0100.to.unlock@victims.test' },
    { why: 'role_address', setup: () => autorespondingKey(), visitor: 'postmaster@visitors.example' },
    { why: 'role_address', setup: () => autorespondingKey(), visitor: 'No-Reply+forms@visitors.example' },
    { why: 'role_address', setup: () => autorespondingKey(), visitor: 'MAILER-DAEMON@visitors.example' },
    {
      why: 'suppressed',
      setup: async () => {
        await h.sql(`insert into address_bounces (address, hard_bounces, last_bounced_at, suppressed_until) values ($1, 3, now(), now() + interval '1 day')`, [
          'bounced@visitors.example',
        ]);
        return autorespondingKey();
      },
      visitor: 'bounced@visitors.example',
    },
    {
      why: 'suppressed',
      setup: async () => {
        await h.sql('insert into mailbox_complaints (mailbox, complained_at) values ($1, now())', ['complainer@visitors.example']);
        return autorespondingKey();
      },
      visitor: 'COMPLAINER@Visitors.example',
    },
  ])('sends none when $why ($visitor), and says so on the submission', async ({ why, setup, visitor }) => {
    const key = await setup();
    const id = await submit(key, visitor);
    const record = await decided(id);
    expect(record.autoresponse).toBe(why);
    expect(record.email_status).toBe('sent');
    expect(autoresponsesTo(visitor)).toHaveLength(0);
  });

  it.each(['spam', 'unchecked'] as const)('sends none for a submission the spam check called %s', async (verdict) => {
    const key = await autorespondingKey();
    const visitor = `${verdict}@visitors.example`;
    // A verdict already on the row stands (as after the owner's "not spam"): the owner's email goes, the autoresponse does not.
    const submission = await buildSubmission(h, { key, email: visitor, message: VISITOR_TEXT });
    await h.sql('update submissions set spam_verdict = $1 where id = $2', [verdict, submission.id]);
    const redis = new Redis(h.env.REDIS_URL!, { maxRetriesPerRequest: 1 });
    const queue = createDeliveryQueue<DeliveryJob>(redis, h.config);
    try {
      const job = submissionJob(submission.id);
      await queue.add(job.name, job.data, { jobId: submission.id });
    } finally {
      await queue.close();
      redis.disconnect();
    }
    const record = await decided(submission.id);
    expect(record.autoresponse).toBe(verdict);
    expect(record.email_status).toBe('sent');
    expect(autoresponsesTo(visitor)).toHaveLength(0);
  });
});

describe('the bounds', () => {
  it('one per visitor mailbox per key per 24 h, and 3 per mailbox across keys, however the address is spelled', async () => {
    const [first, second, third, fourth] = [await autorespondingKey(), await autorespondingKey(), await autorespondingKey(), await autorespondingKey()];
    const outcomes: Array<[string, string]> = [];
    for (const [key, visitor] of [
      [first, 'Jane.Doe@gmail.com'],
      [first, 'JaneDoe@GMAIL.com'],
      [second, 'jane.doe@googlemail.com'],
      [third, 'J.a.neDoe@gmail.com'],
      [fourth, 'janedoe@gmail.com'],
    ] as const) {
      outcomes.push([visitor, (await decided(await submit(key, visitor))).autoresponse]);
    }
    expect(outcomes).toEqual([
      ['Jane.Doe@gmail.com', 'sent'],
      ['JaneDoe@GMAIL.com', 'limit_key'],
      ['jane.doe@googlemail.com', 'sent'],
      ['J.a.neDoe@gmail.com', 'sent'],
      ['janedoe@gmail.com', 'limit_address'],
    ]);
    const sent = h.sink.messages.filter(
      (mail) => mail.parsed.headers.get('auto-submitted') === 'auto-replied' && mail.envelope.to.some((to) => /doe/i.test(to)),
    );
    expect(sent.map((mail) => mail.envelope.to[0])).toEqual(['Jane.Doe@gmail.com', 'jane.doe@googlemail.com', 'J.a.neDoe@gmail.com']);
  });

  it('two submissions decided at once by concurrent jobs: one autoresponse', async () => {
    const key = await autorespondingKey();
    const ids = await Promise.all(['twin@visitors.example', 'Twin@visitors.example', 'TWIN@Visitors.example'].map((visitor) => submit(key, visitor)));
    const outcomes = await Promise.all(ids.map(async (id) => (await decided(id)).autoresponse));
    expect(outcomes.toSorted()).toEqual(['limit_key', 'limit_key', 'sent']);
    expect(h.sink.messages.filter((mail) => mail.parsed.headers.get('auto-submitted') === 'auto-replied' && /twin/i.test(mail.envelope.to[0]!))).toHaveLength(
      1,
    );
  });
});

describe("after the visitor's address is erased (POST /admin/visitors/erase)", () => {
  /** Erases the address through the admin API; the summary of the stream's last line. */
  async function erase(address: string) {
    const response = await admin('POST', '/admin/visitors/erase', { email: address });
    expect(response.status).toBe(200);
    const last = JSON.parse(response.text.trim().split('\n').at(-1)!);
    expect(last.done).toBe(true);
    return last.summary;
  }

  it('a bounced address stays suppressed, though its record no longer holds it', async () => {
    const visitor = 'erased-bounced@visitors.example';
    await h.sql(`insert into address_bounces (address, hard_bounces, last_bounced_at, suppressed_until) values ($1, 3, now(), now() + interval '1 day')`, [
      visitor,
    ]);
    expect((await erase(visitor)).bounces_kept_erased).toBe(1);
    expect(await h.sql('select 1 from address_bounces where address = $1', [visitor])).toEqual([]);
    expect((await decided(await submit(await autorespondingKey(), 'Erased-Bounced@visitors.example'))).autoresponse).toBe('suppressed');
    expect(autoresponsesTo('Erased-Bounced@visitors.example')).toHaveLength(0);
  });

  it('a mailbox that complained stays suppressed', async () => {
    await h.sql('insert into mailbox_complaints (mailbox, complained_at) values ($1, now())', ['erased-complainer@visitors.example']);
    expect((await erase('erased-complainer@visitors.example')).complaints_kept_erased).toBe(1);
    expect((await decided(await submit(await autorespondingKey(), 'erased-complainer@visitors.example'))).autoresponse).toBe('suppressed');
  });

  it("the day's autoresponse still counts: the same form sends no second one within 24 hours", async () => {
    const key = await autorespondingKey();
    const visitor = 'erased-counted@visitors.example';
    expect((await decided(await submit(key, visitor))).autoresponse).toBe('sent');
    expect((await erase(visitor)).autoresponses_kept_erased).toBe(1);
    expect(await h.sql('select 1 from autoresponses where mailbox = $1', [visitor])).toEqual([]);
    expect((await decided(await submit(key, visitor))).autoresponse).toBe('limit_key');
    expect(autoresponsesTo(visitor)).toHaveLength(1);
  });
});

describe('the bounds of a key and of its owner', () => {
  /** Autoresponses the key already sent today, as rows (they count like any other). */
  const sentToday = (key: KeyRow, count: number) =>
    h.sql(
      `insert into autoresponses (id, key_id, email, mailbox, email_status, sent_at)
       select gen_random_uuid(), $1, 'earlier' || n || '@visitors.example', 'earlier' || n || '@visitors.example', 'sent', now() from generate_series(1, $2) n`,
      [key.id, count],
    );

  it('a new key answers 20 strangers a day, however many write, and says why for the rest', async () => {
    const key = await autorespondingKey();
    const strangers = Array.from({ length: 25 }, (_, n) => `stranger${n}@victims${n % 5}.test`);
    const ids = await Promise.all(strangers.map((visitor) => submit(key, visitor)));
    const outcomes = await Promise.all(ids.map(async (id) => (await decided(id)).autoresponse as string));
    expect(outcomes.filter((outcome) => outcome === 'sent')).toHaveLength(20);
    expect(outcomes.filter((outcome) => outcome === 'limit_key_day')).toHaveLength(5);
    expect(
      h.sink.messages.filter((mail) => mail.parsed.headers.get('auto-submitted') === 'auto-replied' && /@victims\d\.test$/.test(mail.envelope.to[0]!)),
    ).toHaveLength(20);
    const limited = ids[outcomes.indexOf('limit_key_day')]!;
    const owner = await signIn(h, key.email);
    const page = await owner.get(`/owner/submissions/${limited}`);
    expect(page.text).toContain('<dd data-field="autoresponse">none: this key sent as many autoresponses as it may in 24 hours</dd>');
    expect((await admin('GET', '/metrics')).text).toMatch(/^cfs_autoresponses_total\{outcome="limit_key_day"\} [5-9]/m);
  });

  it("an owner's keys together send twice a new key's bound", async () => {
    const email = `many-keys-${Date.now()}@owners.example`;
    const [first, second] = [await autorespondingKey({ email }), await autorespondingKey({ email })];
    // 39 of the owner's 40 today, the second key at 9 of its own 20.
    await sentToday(first, 30);
    await sentToday(second, 9);
    const outcomes = [];
    for (const visitor of ['one@visitors.example', 'two@visitors.example']) outcomes.push((await decided(await submit(second, visitor))).autoresponse);
    expect(outcomes).toEqual(['sent', 'limit_owner_day']);
  });

  it('an approved key has the most from its first day; a change of its text takes the approval back', async () => {
    const key = await autorespondingKey();
    // Past a new key's 20 and a new owner's 40: approval lifts both.
    await sentToday(key, 45);
    expect((await decided(await submit(key, 'before-approval@visitors.example'))).autoresponse).toBe('limit_key_day');
    const approved = await admin('PATCH', `/admin/keys/${key.key}`, { autoresponse_review: 'approved' });
    expect(approved.json.autoresponse).toMatchObject({ enabled: true, review: 'approved' });
    expect((await decided(await submit(key, 'after-approval@visitors.example'))).autoresponse).toBe('sent');

    const owner = await signIn(h, key.email);
    const changed = await owner.api('PATCH', `/keys/${key.id}`, { autoresponse: { text: 'New words, not yet approved.' } });
    expect(changed.json.autoresponse).toMatchObject({ review: null });
    expect((await decided(await submit(key, 'after-change@visitors.example'))).autoresponse).toBe('limit_key_day');
    // Only the operator reviews: the owner API refuses the field.
    expect((await owner.api('PATCH', `/keys/${key.id}`, { autoresponse_review: 'approved' })).status).toBe(400);
  });
});

describe("the owner's words, checked as mail", () => {
  it("links only to the key's domains, refused before they are saved, in both APIs", async () => {
    const key = await autorespondingKey();
    const owner = await signIn(h, key.email);
    for (const text of ['Claim it now: https://prize.example.net/now', 'Visit www.prize-site.test', 'Write to winner@prize-site.com']) {
      const refused = await owner.api('PATCH', `/keys/${key.id}`, { autoresponse: { text } });
      expect(refused.status, text).toBe(400);
      expect(refused.json.errors['autoresponse.text'][0]).toMatch(/^An autoresponse links only to this key's domains \(shop\.example\); it links to /);
      expect((await admin('PATCH', `/admin/keys/${key.key}`, { autoresponse: { text } })).status).toBe(400);
    }
    const noDomains = await h.createKey();
    const none = await admin('PATCH', `/admin/keys/${noDomains.key}`, { autoresponse: { subject: 'Thanks', text: 'See https://shop.example/' } });
    expect(none.json.errors['autoresponse.text']).toEqual(['An autoresponse links none for a key without domains; it links to shop.example.']);
    expect((await owner.api('GET', '/keys')).json.keys[0].autoresponse.text).toBe(OWNER_TEXT);
  });

  it('refuses a text the spam filter reads as spam before it is saved', async () => {
    const key = await autorespondingKey();
    const gtube = 'XJS*C4JDBQADN1.NSBN3*2IDNEN*GTUBE-STANDARD-ANTI-UBE-TEST-EMAIL*C.34X';
    const refused = await admin('PATCH', `/admin/keys/${key.key}`, { autoresponse: { text: `Your prize is waiting. ${gtube}` } });
    expect(refused.status).toBe(400);
    expect(refused.json.errors['autoresponse.text']).toEqual([
      'The spam filter reads this autoresponse as spam: write it as a plain note to the person who wrote.',
    ]);
  });

  it('checks them again before each one goes: a domain removed since makes it text_refused', async () => {
    const key = await autorespondingKey();
    expect((await admin('PATCH', `/admin/keys/${key.key}`, { domains: ['other.example'], use_domain: false })).status).toBe(200);
    const visitor = 'recheck@visitors.example';
    expect((await decided(await submit(key, visitor))).autoresponse).toBe('text_refused');
    expect(autoresponsesTo(visitor)).toHaveLength(0);
  });

  it.each([
    ['autoresponse.subject', { subject: 'Thanks \u202egnp.exe' }],
    ['autoresponse.text', { text: 'Thanks \u2067for\u2069 writing' }],
  ])('refuses a bidi control in %s', async (field, autoresponse) => {
    const key = await h.createKey();
    const refused = await admin('PATCH', `/admin/keys/${key.key}`, { autoresponse });
    expect(refused.status).toBe(400);
    expect(refused.json.errors[field]).toHaveLength(1);
  });
});

describe("the owner's email", () => {
  it('is sent and recorded as sent when the autoresponse is refused for good', async () => {
    const key = await autorespondingKey();
    const visitor = 'refused@visitors.example';
    h.sink.behave((session) => (session.envelope.rcptTo.some((rcpt) => rcpt.address === visitor) ? { code: 550, message: 'No such user' } : undefined));
    try {
      const id = await submit(key, visitor);
      const record = await decided(id);
      expect(record.autoresponse).toBe('failed');
      expect(record.email_status).toBe('sent');
      expect(record.last_error).toBeNull();
      expect(mailsTo(key.email)).toHaveLength(1);
    } finally {
      h.sink.behave(undefined);
    }
  });
});

describe('a submission whose owner’s email a worker of the previous release sent (during a rolling upgrade)', () => {
  it('gets its copy to the added recipient and its autoresponse from the reconciler, each once', async () => {
    const key = await autorespondingKey({ email: 'upgrading-owner@example.test' });
    const colleague = await buildKeyRecipient(h, { key: key.id, createdAt: ago({ minutes: 10 }) });
    const visitor = 'upgrade@visitors.example';
    // As that worker leaves it: sent, the spam check's ham on it, no copy made, no autoresponse outcome.
    const submission = await buildSubmission(h, {
      key,
      email: visitor,
      message: `Where is my order? ${VISITOR_TEXT}`,
      status: 'sent',
      createdAt: ago({ minutes: 2 }),
      sentAt: ago({ minutes: 1 }),
    });
    await h.sql(`update submissions set spam_verdict = 'ham', spam_checked_at = now() where id = $1`, [submission.id]);

    const record = await eventually(
      async () => {
        const found = (await admin('GET', `/admin/submissions/${submission.id}`)).json;
        return found.autoresponse === 'sent' && mailsTo(colleague.email).length > 0 ? found : undefined;
      },
      90_000,
      'the copy and the autoresponse sent',
    );
    expect(record.email_status).toBe('sent');
    // Another reconciler run finds nothing left to do: had it made a copy or an autoresponse again,
    // that email would have come by the time the emails have settled.
    await runReconciler(h);
    await mailSettled(h);
    const copies = mailsTo(colleague.email);
    expect(copies).toHaveLength(1);
    expect(copies[0]!.parsed.text).toContain(VISITOR_TEXT);
    expect(autoresponsesTo(visitor)).toHaveLength(1);
    // The owner's email is not sent again.
    expect(mailsTo(key.email)).toHaveLength(0);
  }, 150_000);
});

describe('the settings', () => {
  it.each([
    { what: 'turned on without a text', autoresponse: { enabled: true, subject: 'Thanks', text: null }, field: 'autoresponse' },
    { what: 'a subject of two lines', autoresponse: { subject: 'Two\nlines' }, field: 'autoresponse.subject' },
    { what: 'a subject of 151 characters', autoresponse: { subject: 'x'.repeat(151) }, field: 'autoresponse.subject' },
    { what: 'a text of 2,001 characters', autoresponse: { text: 'x'.repeat(2001) }, field: 'autoresponse.text' },
    { what: 'HTML of the owner', autoresponse: { html: '<b>hi</b>' }, field: 'autoresponse.html' },
  ])('refuses $what', async ({ autoresponse, field }) => {
    const key = await h.createKey();
    const response = await admin('PATCH', `/admin/keys/${key.key}`, { autoresponse });
    expect(response.status).toBe(400);
    expect(response.json.errors[field]).toHaveLength(1);
    const listed = await admin('GET', `/admin/keys?email=${encodeURIComponent(key.email)}`);
    expect(JSON.stringify(listed.json)).toContain('"autoresponse":{"enabled":false,"subject":null,"text":null,"review":null}');
  });

  it('are off by default and shown in the key record', async () => {
    const key = await h.createKey();
    const listed = await admin('GET', `/admin/keys?email=${encodeURIComponent(key.email)}`);
    expect(JSON.stringify(listed.json)).toContain('"autoresponse":{"enabled":false,"subject":null,"text":null,"review":null}');
  });

  it("are the owner's to set through the owner API, and the submission's outcome shows there and on its console page", async () => {
    const key = await h.createKey();
    await buildRecipient(h, { mailbox: key.mailbox });
    const owner = await signIn(h, key.email);
    const changed = await owner.api('PATCH', `/keys/${key.id}`, {
      domains: [OWNER_DOMAIN],
      use_domain: false,
      captcha: 'hcaptcha',
      autoresponse: { enabled: true, subject: SUBJECT, text: OWNER_TEXT },
    });
    expect(changed.status).toBe(200);
    await h.sql(`update verification_keys set captcha_required_since = now() - interval '1 hour' where id = $1`, [key.id]);
    expect(changed.json.autoresponse).toEqual({ enabled: true, subject: SUBJECT, text: OWNER_TEXT, review: null });
    // Each part left out is kept.
    const renamed = await owner.api('PATCH', `/keys/${key.id}`, { autoresponse: { subject: 'Got it' } });
    expect(renamed.json.autoresponse).toEqual({ enabled: true, subject: 'Got it', text: OWNER_TEXT, review: null });

    const id = await submit(key, 'owner-api@visitors.example');
    await decided(id);
    expect((await owner.api('GET', `/submissions/${id}`)).json.autoresponse).toBe('sent');
    const page = await owner.get(`/owner/submissions/${id}`);
    expect(page.text).toContain('<dt>Autoresponse</dt><dd data-field="autoresponse">sent to the visitor</dd>');
  });
});
