// The bounce receiver, driven as a relay drives it: reports sent over SMTP to the return path of a
// real submission's email. What the owner sees of each is checked on the row, the owner's JSON
// API, the webhooks and the SMTP replies.
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import nodemailer from 'nodemailer';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startBounceReceiver, type BounceProcess } from '../../src/bounces/process.ts';
import { freePort } from '../../src/local/services.ts';
import { createPgPool } from '../../src/shared/infra/db/pg-pool.ts';
import { createLogger } from '../../src/shared/infra/log.ts';
import { recordSent } from '../../src/shared/deliveries/deliveries.ts';
import { createReturnPaths } from '../../src/shared/bounces/return-path.ts';
import { abuseReport, dsn, type DsnFields } from '../../tools/sample-reports.ts';
import { NOW, updateSubmission } from '../support/factories.ts';
import { eventually, postJson, startHarness, TEST_SECRET, type Harness, type TestKey } from '../support/harness.ts';
import { emailStatusOf } from '../support/rows.ts';
import { signIn } from '../support/owner.ts';
import { request } from '../support/http.ts';
import { openSmtp, sendRaw, type SmtpSession } from '../support/smtp-client.ts';
import { startReceiver, type Receiver } from '../support/webhook-receiver.ts';

const DOMAIN = 'bounces.test';
const ADMIN_TOKEN = 'bounce-test-admin-token-0123456789';
let h: Harness;
let receiver: BounceProcess;
let hooks: Receiver;
const paths = createReturnPaths(TEST_SECRET, DOMAIN);

beforeAll(async () => {
  h = await startHarness({
    env: {
      BOUNCE_DOMAIN: DOMAIN,
      SUPPRESS_AFTER_HARD_BOUNCES: '2',
      BOUNCE_MAX_BYTES: '65536',
      BOUNCE_METRICS_PORT: '0',
      ADMIN_TOKEN,
      WEBHOOK_ALLOW: '127.0.0.6',
      WEBHOOK_RETRY_BACKOFF_MS: '100',
    },
  });
  receiver = await h.startBounces();
  hooks = await startReceiver('127.0.0.6');
});
afterAll(async () => {
  await hooks?.close();
  await h?.stop();
});

type Row = { email_status: string; bounce_type: string | null; bounce_status: string | null; bounce_diagnostic: string | null; bounce_mta: string | null };
const row = async (id: string) =>
  (await h.sql<Row>('select email_status, bounce_type, bounce_status, bounce_diagnostic, bounce_mta from submissions where id = $1', [id]))[0]!;

/** A submission emailed to its key's owner: its id and the return path its email carried. */
async function delivered(key: TestKey, message = 'hello'): Promise<{ id: string; returnPath: string }> {
  const submitted = await postJson(`${h.url}/api/contact-api/`, { access_key: key.key, email: 'visitor@example.org', message });
  expect(submitted.status).toBe(200);
  const id = submitted.json.submission_id as string;
  const mail = await eventually(async () => h.sink.messages.find((m) => m.parsed.messageId?.includes(id)), 20_000, 'the email');
  await eventually(async () => ((await row(id)).email_status === 'sent' ? true : undefined), 10_000, '`sent`');
  return { id, returnPath: mail.envelope.from };
}

const bounceTo = (returnPath: string, fields: Omit<DsnFields, 'to'> = {}) =>
  sendRaw(receiver.port, { from: '', to: [returnPath] }, dsn({ ...fields, to: returnPath }));

describe('return paths', () => {
  it('gives each email an envelope sender of its own at BOUNCE_DOMAIN; From and Reply-To do not change', async () => {
    const key = await h.createKey();
    const { id, returnPath } = await delivered(key);
    expect(returnPath).toBe(paths.address('submission', id));
    expect(returnPath).toMatch(/^b-s-[0-9a-f]{32}-[0-9a-f]{16}@bounces\.test$/);
    const mail = h.sink.messages.find((m) => m.envelope.from === returnPath)!;
    expect(mail.parsed.from?.value[0]).toEqual({ name: 'Contact Form', address: 'forms@example.test' });
    expect(mail.parsed.replyTo?.text).toBe('visitor@example.org');
  });
});

describe('the bounce receiver', () => {
  it('turns a hard bounce into `bounced` with its status, diagnostic and reporting MTA, shown to the owner and sent to webhooks', async () => {
    const key = await h.createKey();
    const owner = await signIn(h, key.email);
    const added = await owner.api('POST', `/keys/${key.id}/webhooks`, { url: hooks.url });
    expect(added.status).toBe(201);
    const { id, returnPath } = await delivered(key);

    const reply = await bounceTo(returnPath, {
      status: '5.1.1',
      diagnostic: 'smtp; 550 5.1.1 <owner@example.test>: User unknown',
      reportingMta: 'mx.example.net',
    });
    expect(reply.rcpt[0]!.code).toBe(250);
    expect(reply.data?.code).toBe(250);
    // Committed before the 250: no waiting needed.
    expect(await row(id)).toEqual({
      email_status: 'bounced',
      bounce_type: 'hard',
      bounce_status: '5.1.1',
      bounce_diagnostic: '550 5.1.1 <owner@example.test>: User unknown',
      bounce_mta: 'mx.example.net',
    });
    const seen = await owner.api('GET', `/submissions/${id}`);
    expect(seen.json).toMatchObject({ email_status: 'bounced', bounce: { type: 'hard', status: '5.1.1', reporting_mta: 'mx.example.net' } });
    const page = await owner.get(`/owner/submissions/${id}`);
    expect(page.text).toContain('User unknown');
    const operator = await request(`${h.url}/admin/submissions/${id}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(operator.json).toMatchObject({
      email_status: 'bounced',
      bounce: { type: 'hard', status: '5.1.1', diagnostic: '550 5.1.1 <owner@example.test>: User unknown' },
    });
    const csv = await request(`${h.url}/admin/submissions.csv?key=${key.key}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(csv.text).toContain(',bounced,');
    expect(csv.text).toContain(',hard,5.1.1,550 5.1.1 <owner@example.test>: User unknown,');
    const metrics = await request(`http://127.0.0.1:${receiver.metricsPort}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(metrics.text).toMatch(/cfs_bounces_total\{kind="submissions",type="hard"\} [1-9]/);

    const event = await eventually(
      async () => hooks.received.map((r) => JSON.parse(r.body)).find((body) => body.type === 'submission.bounced' && body.data.id === id),
      20_000,
      'the webhook',
    );
    expect(event.data.bounce).toMatchObject({ type: 'hard', status: '5.1.1' });
  });

  it('refuses at RCPT a forged return path: a wrong MAC, another row id under a valid MAC, another domain', async () => {
    const key = await h.createKey();
    const { id, returnPath } = await delivered(key);
    const other = await delivered(key);
    const [, , hex, mac] = /^b-(s)-([0-9a-f]{32})-([0-9a-f]{16})@/.exec(returnPath)!;
    const forged = [
      returnPath.replace(/-([0-9a-f]{16})@/, (_, m: string) => `-${m.slice(0, 15)}${m.endsWith('0') ? '1' : '0'}@`),
      `b-s-${other.id.replace(/-/g, '')}-${mac}@${DOMAIN}`,
      `b-k-${hex}-${mac}@${DOMAIN}`,
      returnPath.replace(DOMAIN, 'elsewhere.test'),
    ];
    for (const address of forged) {
      const reply = await sendRaw(receiver.port, { from: '', to: [address] }, dsn({ to: address }));
      expect(reply.rcpt[0]!.code, address).toBe(550);
      expect(reply.data).toBeUndefined();
    }
    expect((await row(id)).email_status).toBe('sent');
    expect((await row(other.id)).email_status).toBe('sent');
  });

  it('accepts mail to postmaster at BOUNCE_DOMAIN (RFC 5321) without changing any row; postmaster of another domain is refused', async () => {
    const key = await h.createKey();
    const { id, returnPath } = await delivered(key);
    const before = await row(id);
    const note = ['From: admin@example.net', `To: postmaster@${DOMAIN}`, 'Subject: Your server', '', 'Hello postmaster.', ''].join('\r\n');
    for (const address of [`postmaster@${DOMAIN}`, `PostMaster@${DOMAIN}`, 'postmaster']) {
      const reply = await sendRaw(receiver.port, { from: 'admin@example.net', to: [address] }, note);
      expect(reply.rcpt[0]!.code, address).toBe(250);
      expect(reply.data?.code, address).toBe(250);
    }
    // A report sent to postmaster alone is not read as one, whatever it names.
    const report = await sendRaw(receiver.port, { from: '', to: [`postmaster@${DOMAIN}`] }, dsn({ to: returnPath }));
    expect(report.data?.code).toBe(250);
    expect(await row(id)).toEqual(before);
    expect(await h.sql('select 1 from address_bounces where address = $1', [key.email])).toHaveLength(0);

    // Sent to the return path and to postmaster, it is recorded once, on its row.
    const both = await sendRaw(receiver.port, { from: '', to: [returnPath, `postmaster@${DOMAIN}`] }, dsn({ to: returnPath }));
    expect(both.rcpt.map((reply) => reply.code)).toEqual([250, 250]);
    expect(both.data?.code).toBe(250);
    expect(await row(id)).toMatchObject({ email_status: 'bounced', bounce_type: 'hard', bounce_status: '5.1.1' });

    const elsewhere = await sendRaw(receiver.port, { from: 'admin@example.net', to: ['postmaster@elsewhere.test'] }, note);
    expect(elsewhere.rcpt[0]!.code).toBe(550);
    expect(elsewhere.data).toBeUndefined();
  });

  it('records a delay and a soft bounce without changing the status; a hard bounce after them is final', async () => {
    const key = await h.createKey();
    const { id, returnPath } = await delivered(key);
    expect((await bounceTo(returnPath, { action: 'delayed', status: '4.4.1', diagnostic: 'smtp; 451 4.4.1 try later' })).data?.code).toBe(250);
    expect(await row(id)).toMatchObject({ email_status: 'sent', bounce_type: 'delayed', bounce_status: '4.4.1' });
    expect((await bounceTo(returnPath, { status: '4.2.2', diagnostic: 'smtp; 452 4.2.2 mailbox full' })).data?.code).toBe(250);
    expect(await row(id)).toMatchObject({ email_status: 'sent', bounce_type: 'soft', bounce_status: '4.2.2' });
    // A delay after a soft bounce does not hide it.
    await bounceTo(returnPath, { action: 'delayed', status: '4.4.1' });
    expect((await row(id)).bounce_type).toBe('soft');
    await bounceTo(returnPath, { status: '5.2.1', diagnostic: 'smtp; 550 5.2.1 account disabled' });
    expect(await row(id)).toMatchObject({ email_status: 'bounced', bounce_type: 'hard', bounce_status: '5.2.1' });
  });

  it('takes a duplicate report once: one webhook event, one hard bounce counted for the address', async () => {
    const key = await h.createKey({ email: 'dup-owner@example.test' });
    const { id, returnPath } = await delivered(key);
    for (let i = 0; i < 3; i++) expect((await bounceTo(returnPath)).data?.code).toBe(250);
    expect((await row(id)).email_status).toBe('bounced');
    const events = await h.sql('select id from webhook_deliveries where submission_id = $1', [id]);
    expect(events).toHaveLength(0); // this key has no webhook: none at all
    const [counted] = await h.sql<{ hard_bounces: number }>('select hard_bounces from address_bounces where address = $1', ['dup-owner@example.test']);
    expect(counted!.hard_bounces).toBe(1);
  });

  it('keeps `bounced` when the report arrives before the worker recorded `sent`', async () => {
    const key = await h.createKey();
    const { id, returnPath } = await delivered(key);
    // As if the relay's 250 had come and the worker's write of `sent` were still on its way.
    await updateSubmission(h, id, { status: 'sending', sentAt: null, claimedAt: NOW });
    await bounceTo(returnPath);
    expect((await row(id)).email_status).toBe('bounced');
    const claim = (await h.sql<{ claim: string }>('select claimed_at::text as claim from submissions where id = $1', [id]))[0]!.claim;
    const pool = createPgPool(h.env.DATABASE_URL!, 1);
    try {
      await recordSent(pool, 'submission', [{ id, claim, messageId: '<late@example.test>' }], 'test');
    } finally {
      await pool.end();
    }
    // The worker's write went through (its Message-ID is kept); the status stays the report's.
    const [written] = await h.sql<{ email_status: string; message_id: string }>('select email_status, message_id from submissions where id = $1', [id]);
    expect(written).toEqual({ email_status: 'bounced', message_id: '<late@example.test>' });
  });

  it('records an abuse complaint as `complained`', async () => {
    const key = await h.createKey();
    const { id, returnPath } = await delivered(key);
    const reply = await sendRaw(receiver.port, { from: 'fbl@isp.example', to: [returnPath] }, abuseReport(returnPath));
    expect(reply.data?.code).toBe(250);
    expect(await row(id)).toMatchObject({ email_status: 'complained', bounce_type: 'complaint' });
  });

  it('answers 250 to what is not a report (an auto-reply, garbage) and changes nothing', async () => {
    const key = await h.createKey();
    const { id, returnPath } = await delivered(key);
    const autoReply = [
      'From: owner@example.test',
      `To: ${returnPath}`,
      'Subject: Out of office',
      'Auto-Submitted: auto-replied',
      '',
      'I am away until Monday.',
      '',
    ].join('\r\n');
    expect((await sendRaw(receiver.port, { from: 'owner@example.test', to: [returnPath] }, autoReply)).data?.code).toBe(250);
    const garbage = Buffer.from(Array.from({ length: 4000 }, (_, i) => (i * 7919) % 256)).toString('latin1');
    expect((await sendRaw(receiver.port, { from: '', to: [returnPath] }, garbage)).data?.code).toBe(250);
    expect(await row(id)).toMatchObject({ email_status: 'sent', bounce_type: null });
  });

  it('refuses a message over BOUNCE_MAX_BYTES with 552 and records nothing', async () => {
    const key = await h.createKey();
    const { id, returnPath } = await delivered(key);
    const huge = dsn({ to: returnPath }).replace('Your message could not be delivered.', 'x'.repeat(70_000));
    const reply = await sendRaw(receiver.port, { from: '', to: [returnPath] }, huge);
    expect(reply.data?.code).toBe(552);
    expect((await row(id)).email_status).toBe('sent');
  });

  it('answers 451 when PostgreSQL cannot be reached, so the relay retries; the report lands once it can', async () => {
    const key = await h.createKey();
    const { id, returnPath } = await delivered(key);
    // A receiver whose database is down: nothing listens where its DATABASE_URL points.
    const down = await startBounceReceiver(
      {
        ...h.config,
        BOUNCE_DOMAIN: DOMAIN,
        BOUNCE_SMTP_HOST: '127.0.0.1',
        BOUNCE_SMTP_PORT: 0,
        DATABASE_URL: `postgres://nobody@127.0.0.1:${await freePort()}/none`,
      },
      createLogger('test', 'silent'),
    );
    try {
      const refused = await sendRaw(down.port, { from: '', to: [returnPath] }, dsn({ to: returnPath }));
      expect(refused.rcpt[0]!.code).toBe(250);
      expect(refused.data?.code).toBe(451);
    } finally {
      await down.shutdown.run();
    }
    expect((await row(id)).email_status).toBe('sent');
    // The relay's retry, once the database is back.
    expect((await bounceTo(returnPath)).data?.code).toBe(250);
    expect((await row(id)).email_status).toBe('bounced');
  });
});

describe('suppression', () => {
  it('stops attempting an address after SUPPRESS_AFTER_HARD_BOUNCES hard bounces; signing in lifts it, and the owner re-sends', async () => {
    const key = await h.createKey({ email: 'suppressed-owner@example.test' });
    for (let i = 0; i < 2; i++) {
      const { returnPath } = await delivered(key, `bounces ${i}`);
      expect((await bounceTo(returnPath)).data?.code).toBe(250);
    }
    const submitted = await postJson(`${h.url}/api/contact-api/`, { access_key: key.key, email: 'visitor@example.org', message: 'not attempted' });
    const id = submitted.json.submission_id as string;
    const suppressed = await eventually(
      async () => {
        const current = await h.sql<{ email_status: string; last_error: string | null }>('select email_status, last_error from submissions where id = $1', [
          id,
        ]);
        return current[0]!.email_status === 'suppressed' ? current[0] : undefined;
      },
      20_000,
      '`suppressed`',
    );
    expect(suppressed.last_error).toMatch(/bounced repeatedly; suppressed until .+ or until its owner signs in/);
    expect(h.sink.messages.some((m) => m.parsed.messageId?.includes(id))).toBe(false);

    // The sign-in email is not a submission email: it goes out, and its arrival lifts the suppression.
    const owner = await signIn(h, key.email);
    expect(await h.sql('select 1 from address_bounces where address = $1', [key.email])).toHaveLength(0);
    const seen = await owner.api('GET', `/submissions/${id}`);
    expect(seen.json.email_status).toBe('suppressed');
    const resent = await owner.api('POST', `/submissions/${id}/resend`);
    expect(resent.status).toBe(200);
    await eventually(async () => h.sink.messages.find((m) => m.parsed.messageId?.includes(id)), 20_000, 'the re-sent email');
  });

  it('counts a bounce for the address exactly as mailed: keys a stranger asks for `owner+tag@` that bounce stop no mail to `owner@`', async () => {
    const owner = await h.createKey({ email: 'carol@plus-less.test' });
    const tagged = 'carol+x@plus-less.test';
    // The stranger's key requests; the owner's server knows no +tags, so each key email bounces.
    const strangersKeys: string[] = [];
    for (let i = 0; i < 3; i++) {
      const created = await postJson(`${h.url}/`, { email: tagged });
      expect(created.status).toBe(200);
      strangersKeys.push(created.json.key as string);
      const mail = await eventually(async () => h.sink.messages.find((m) => m.parsed.text?.includes(created.json.key as string)), 20_000, 'the key email');
      expect(mail.envelope.to).toEqual([tagged]);
      expect((await bounceTo(mail.envelope.from)).data?.code).toBe(250);
    }

    // The owner's own address still gets its mail.
    await delivered(owner, 'after the stranger');
    // The address that bounced is the one suppressed.
    const submitted = await postJson(`${h.url}/api/contact-api/`, {
      access_key: strangersKeys[0],
      email: 'visitor@example.org',
      message: 'to the tagged address',
    });
    expect(submitted.status).toBe(200);
    const id = submitted.json.submission_id as string;
    await eventually(async () => ((await emailStatusOf(h, id)) === 'suppressed' ? true : undefined), 20_000, '`suppressed` for the address that bounced');
    expect(h.sink.messages.some((m) => m.parsed.messageId?.includes(id))).toBe(false);
  });
});

describe('complaints', () => {
  it('suppresses the mailbox at once, for every key of its owner and for keys others create for it, until the owner signs in', async () => {
    const key = await h.createKey({ email: 'complaining-owner@example.test' });
    const otherKey = await h.createKey({ email: 'complaining-owner@example.test' });
    const { returnPath } = await delivered(key, 'the email reported');
    expect((await sendRaw(receiver.port, { from: 'fbl@isp.example', to: [returnPath] }, abuseReport(returnPath))).data?.code).toBe(250);

    const notSent: string[] = [];
    for (const each of [key, otherKey]) {
      const submitted = await postJson(`${h.url}/api/contact-api/`, { access_key: each.key, email: 'visitor@example.org', message: 'after the complaint' });
      expect(submitted.status).toBe(200);
      notSent.push(submitted.json.submission_id as string);
    }
    for (const id of notSent) {
      const suppressed = await eventually(
        async () => {
          const current = await h.sql<{ email_status: string; last_error: string | null }>('select email_status, last_error from submissions where id = $1', [
            id,
          ]);
          return current[0]!.email_status === 'suppressed' ? current[0] : undefined;
        },
        20_000,
        '`suppressed`',
      );
      expect(suppressed.last_error).toBe('not attempted: this address reported an email of this service as spam; suppressed until its owner signs in');
      expect(h.sink.messages.some((m) => m.parsed.messageId?.includes(id))).toBe(false);
    }

    // Anyone can create a key for the address: its email is not sent either.
    const created = await postJson(`${h.url}/`, { email: key.email });
    expect(created.status).toBe(200);
    const newKeyEmail = await eventually(
      async () => {
        const rows = await h.sql<{ email_status: string; last_error: string | null }>(
          "select email_status, last_error from key_emails where mailbox = $1 and kind = 'new-key'",
          [key.email],
        );
        return rows[0]?.email_status === 'suppressed' ? rows[0] : undefined;
      },
      20_000,
      "the new key's email `suppressed`",
    );
    expect(newKeyEmail.last_error).toBe('not attempted: this address reported an email of this service as spam; suppressed until its owner signs in');
    expect(h.sink.messages.some((m) => m.parsed.text?.includes(created.json.key as string))).toBe(false);

    // Signing in (the sign-in email still goes out) says the owner wants these emails again.
    await signIn(h, key.email);
    expect(await h.sql('select 1 from mailbox_complaints where mailbox = $1', [key.email])).toHaveLength(0);
    await delivered(key, 'after signing in');
    const another = await postJson(`${h.url}/`, { email: key.email });
    await eventually(async () => h.sink.messages.find((m) => m.parsed.text?.includes(another.json.key as string)), 20_000, "the next new key's email");
  });
});

describe('STARTTLS and key emails', () => {
  it('offers STARTTLS with BOUNCE_TLS_CERT and BOUNCE_TLS_KEY, and records a report sent over it; a key email bounces too', async () => {
    const openssl = inject('testTools').openssl!;
    if (openssl.problem !== undefined) throw new Error(openssl.problem);
    const dir = await mkdtemp(path.join(tmpdir(), 'cfs-tls-'));
    const [certFile, keyFile] = [path.join(dir, 'cert.pem'), path.join(dir, 'key.pem')];
    execFileSync(
      openssl.path,
      ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-subj', `/CN=${DOMAIN}`, '-days', '1', '-keyout', keyFile, '-out', certFile],
      { stdio: 'ignore' },
    );
    const secured = await startHarness({ env: { BOUNCE_DOMAIN: DOMAIN, BOUNCE_TLS_CERT: certFile, BOUNCE_TLS_KEY: keyFile } });
    try {
      const { port } = await secured.startBounces();
      const session = await openSmtp(port);
      expect((await session.command('EHLO relay.test')).text).toContain('STARTTLS');
      session.close();

      // A key email (the new key's) carries a return path of its kind.
      const created = await postJson(`${secured.url}/`, { email: 'tls-owner@example.test' });
      expect(created.status).toBe(200);
      const [keyEmail] = await eventually(
        async () => {
          const rows = await secured.sql<{ id: string }>("select id from key_emails where email = 'tls-owner@example.test' and email_status = 'sent'");
          return rows.length ? rows : undefined;
        },
        20_000,
        'the key email',
      );
      const returnPath = paths.address('key-email', keyEmail!.id);
      expect(secured.sink.messages.some((m) => m.envelope.from === returnPath)).toBe(true);

      const relay = nodemailer.createTransport({ host: '127.0.0.1', port, requireTLS: true, tls: { rejectUnauthorized: false } });
      try {
        const sent = await relay.sendMail({ envelope: { from: '', to: returnPath }, raw: dsn({ to: returnPath }) });
        expect(sent.response).toMatch(/^250/);
      } finally {
        relay.close();
      }
      const [row] = await secured.sql<{ email_status: string; bounce_status: string }>('select email_status, bounce_status from key_emails where id = $1', [
        keyEmail!.id,
      ]);
      expect(row).toEqual({ email_status: 'bounced', bounce_status: '5.1.1' });
    } finally {
      await secured.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('limits per client address', () => {
  it('refuses a connection past BOUNCE_MAX_CONNECTIONS_PER_IP (421) and a message past the minute allowance (451)', async () => {
    const limited = await startHarness({
      worker: false,
      env: { BOUNCE_DOMAIN: DOMAIN, BOUNCE_MAX_CONNECTIONS_PER_IP: '2', BOUNCE_MESSAGES_PER_MINUTE_PER_IP: '3' },
    });
    try {
      const { port } = await limited.startBounces();
      const first = await openSmtp(port);
      const second = await openSmtp(port);
      const third = await openSmtp(port);
      expect(first.greeting.code).toBe(220);
      expect(second.greeting.code).toBe(220);
      expect(third.greeting.code).toBe(421);
      // Another loopback address has its own allowance.
      const elsewhere = await openSmtp(port, '127.0.0.1', '127.0.0.7');
      expect(elsewhere.greeting.code).toBe(220);
      for (const session of [first, second, third, elsewhere]) session.close();

      const session = await openSmtp(port);
      await session.command('EHLO relay.test');
      const codes = [];
      for (let i = 0; i < 4; i++) {
        codes.push((await session.command('MAIL FROM:<>')).code);
        await session.command('RSET');
      }
      expect(codes).toEqual([250, 250, 250, 451]);
      session.close();
    } finally {
      await limited.stop();
    }
  });

  it('keeps BOUNCE_MAX_CONNECTIONS_PER_IP while refused connections from the address come and go; another address still connects', async () => {
    const limited = await startHarness({ worker: false, env: { BOUNCE_DOMAIN: DOMAIN, BOUNCE_MAX_CONNECTIONS_PER_IP: '3' } });
    const sessions: SmtpSession[] = [];
    try {
      const { port } = await limited.startBounces();
      const held = [];
      for (let i = 0; i < 3; i++) held.push(await openSmtp(port, '127.0.0.1', '127.0.0.3'));
      sessions.push(...held);
      expect(held.map((session) => session.greeting.code)).toEqual([220, 220, 220]);
      // Each refused connection is closed again; its close must not give away a place the three hold.
      for (let i = 1; i <= 5; i++) {
        const refused = await openSmtp(port, '127.0.0.1', '127.0.0.3');
        sessions.push(refused);
        expect(refused.greeting.code, `refused connection ${i}`).toBe(421);
        refused.close();
      }
      const further = await openSmtp(port, '127.0.0.1', '127.0.0.3');
      sessions.push(further);
      expect(further.greeting.code).toBe(421);
      for (const session of held) expect((await session.command('NOOP')).code).toBe(250);
      const elsewhere = await openSmtp(port, '127.0.0.1', '127.0.0.2');
      sessions.push(elsewhere);
      expect(elsewhere.greeting.code).toBe(220);
    } finally {
      for (const session of sessions) session.close();
      await limited.stop();
    }
  });
});
