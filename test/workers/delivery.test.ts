// The delivery worker: the email's content and files, retries and statuses, the operator view.
import { createHash, generateKeyPairSync } from 'node:crypto';
import { HeadObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ago, updateSubmission } from '../support/factories.ts';
import { eventually, startHarness, type Harness } from '../support/harness.ts';
import { submissionRow } from '../support/rows.ts';
import { adminClient, submitJson } from '../support/client.ts';
import { startSmtpSink } from '../support/smtp-sink.ts';
import { Redis } from 'ioredis';
import { createDeliveryQueue } from '../../src/shared/infra/queues/queues.ts';
import type { DeliveryJob } from '../../src/shared/deliveries/delivery-jobs.ts';
import { sleep } from '../support/sleep.ts';

const TOKEN = 'delivery-test-admin-token';
let h: Harness;
let key: { key: string; email: string };
beforeAll(async () => {
  h = await startHarness({ env: { ADMIN_TOKEN: TOKEN, EMAIL_RETRY_BACKOFF_MS: '150', EMAIL_MAX_ATTEMPTS: '4', SMTP_PROBE_INTERVAL_MS: '300' } });
  key = await h.createKey({ email: 'owner@example.test' });
});
afterAll(() => h?.stop());

const submit = (fields: Record<string, unknown>, base = h) =>
  submitJson(base, { access_key: key.key, email: 'visitor@example.org', message: 'Hello', ...fields });
const statusOf = async (id: string, base = h) => (await submissionRow(base, id))!;
const untilStatus = (id: string, status: string, base = h) =>
  eventually(
    async () => {
      const row = await statusOf(id, base);
      return row.email_status === status ? row : undefined;
    },
    20_000,
    `submission ${id} to be ${status}`,
  );
const mailFor = (id: string, sink = h.sink) =>
  eventually(async () => sink.messages.find((mail) => mail.parsed.messageId?.includes(id)), 20_000, `the email of ${id}`);
const admin = adminClient(() => h, TOKEN);
const sha256 = (data: Buffer | Uint8Array) => createHash('sha256').update(data).digest('hex');

describe('the notification email', () => {
  it('goes to the key owner from MAIL_FROM, replies to the sender, and lists every field in order', async () => {
    const response = await submit({ subject: 'Quote', zebra: 'last?', alpha: 'first?', message: 'Line one\nLine two' });
    const id = response.json.submission_id;
    const mail = await mailFor(id);
    expect(mail.envelope.to).toEqual(['owner@example.test']);
    expect(mail.parsed.from?.value[0]?.address).toBe('forms@example.test');
    expect(mail.parsed.replyTo?.value[0]?.address).toBe('visitor@example.org');
    expect(mail.parsed.subject).toBe('Quote');
    const text = mail.parsed.text ?? '';
    expect(text.indexOf('zebra: last?')).toBeGreaterThan(-1);
    expect(text.indexOf('zebra: last?')).toBeLessThan(text.indexOf('alpha: first?'));
    expect(text).toContain('  Line one\n  Line two');
    expect(text).toContain(`Submission: ${id}`);
    expect(text).toMatch(/Received: \d{4}-\d{2}-\d{2}T/);
    expect(mail.parsed.messageId).toBe(`<submission-${id}@example.test>`);
  });

  it('escapes everything the sender wrote in the HTML part, and keeps it as written in the text part', async () => {
    const response = await submit({
      message: `<script>alert(1)</script> & "double" 'single'`,
      '<img src=x onerror=alert(2)>': '<b>bold</b>',
      email: 'visitor@example.org',
    });
    const mail = await mailFor(response.json.submission_id);
    const html = String(mail.parsed.html);
    expect(html).not.toContain('<script>');
    expect(html).not.toContain('<img');
    expect(html).not.toContain('<b>bold');
    // Shown as text: escaped, whichever entity form the escaper picks.
    expect(html).toMatch(
      /(&lt;|&#60;)script(&gt;|&#62;)alert\(1\)(&lt;|&#60;)\/script(&gt;|&#62;) (&amp;|&#38;) (&quot;|&#34;)double(&quot;|&#34;) (&#39;|&#x27;)single(&#39;|&#x27;)/,
    );
    const text = String(mail.parsed.text);
    expect(text).toContain(`  <script>alert(1)</script> & "double" 'single'`);
    expect(text).toContain('  <img src=x onerror=alert(2)>: <b>bold</b>');
  });

  it('keeps field names and values from passing for lines of its own, and drops bidi controls', async () => {
    const id = (
      await submit({
        subject: 'Order \u202eabc',
        message: 'Hi\r\nFrom: boss@bank.example\nReceived: never',
        From: 'ceo@bank.example',
        note: 'fine\r\nSubject: urgent wire transfer\rReply-To: thief@evil.example',
        'odd\r\nSubmission: 123': 'value',
        rtl: 'abc\u2066\u202edef\u2069',
      })
    ).json.submission_id;
    const mail = await mailFor(id);
    const text = mail.parsed.text ?? '';
    // At the left margin only the service's own lines: one From, one Submission, one Received.
    const margin = text.split(/\r\n|\r|\n/).filter((line) => /^\S/.test(line));
    expect(margin).toEqual([
      'New submission to your contact form.',
      'From: visitor@example.org',
      `Submission: ${id}`,
      expect.stringMatching(/^Received: \d{4}-/),
      'Fields, as the sender filled them in:',
      'Message:',
    ]);
    expect(text).toContain('  From: ceo@bank.example\n  note: fine\n  Subject: urgent wire transfer\n  Reply-To: thief@evil.example\n');
    expect(text).toContain('  odd Submission: 123: value');
    expect(text).toContain('  rtl: abcdef');
    const html = String(mail.parsed.html);
    expect(html.indexOf('>ceo@bank.example<')).toBeGreaterThan(html.indexOf('Fields, as the sender filled them in'));
    expect(mail.parsed.subject).toBe('Order abc');
    for (const part of [text, html]) expect(part).not.toMatch(/[\u202a-\u202e\u2066-\u2069]/);
  });

  it('drops bidi controls from file names: stored, listed and attached', async () => {
    const body = new FormData();
    body.set('access_key', key.key);
    body.set('email', 'visitor@example.org');
    body.set('message', 'see attached');
    body.append('file', new Blob([Buffer.from('%PDF-1.4')], { type: 'application/pdf' }), 'invoice\u202efdp.exe');
    const response = await fetch(`${h.url}/api/contact-api/`, { method: 'POST', body, headers: { accept: 'application/json' } });
    const id = ((await response.json()) as any).submission_id;
    const mail = await mailFor(id);
    expect(mail.parsed.text).toContain('  - invoicefdp.exe (application/pdf, 8 bytes)');
    expect(mail.parsed.attachments.map((a) => a.filename)).toEqual(['invoicefdp.exe']);
    expect(await h.sql('select filename from attachments where submission_id = $1', [id])).toEqual([{ filename: 'invoicefdp.exe' }]);
    for (const part of [mail.parsed.text ?? '', String(mail.parsed.html)]) expect(part).not.toMatch(/[\u202a-\u202e\u2066-\u2069]/);
  });

  it("decodes encoded words in the subject and file names before dropping bidi controls: the owner's client finds none to decode", async () => {
    const body = new FormData();
    body.set('access_key', key.key);
    body.set('email', 'visitor@example.org');
    body.set('subject', 'Invoice =?UTF-8?Q?=E2=80=AEgpj.exe?=');
    body.set('message', 'see the encoded names');
    body.append('file', new Blob([Buffer.from('%PDF-1.4')], { type: 'application/pdf' }), '=?UTF-8?Q?=E2=80=AEgpj.exe?=');
    const response = await fetch(`${h.url}/api/contact-api/`, { method: 'POST', body, headers: { accept: 'application/json' } });
    const id = ((await response.json()) as any).submission_id;
    const mail = await mailFor(id);
    // What the owner's client shows once it has decoded the headers.
    expect(mail.parsed.subject).toBe('Invoice gpj.exe');
    expect(mail.parsed.attachments.map((a) => a.filename)).toEqual(['gpj.exe']);
    // The list of files in the text shows the names the attachments carry.
    expect(mail.parsed.text).toContain('  - gpj.exe (application/pdf, 8 bytes)');
    expect(mail.raw.toString('latin1')).not.toContain('=E2=80=AE');
  });

  it('attaches the files, streamed from storage, byte-identical', async () => {
    const first = Buffer.alloc(300_000, 7);
    const second = Buffer.from('plain text file\n');
    const body = new FormData();
    body.set('access_key', key.key);
    body.set('email', 'visitor@example.org');
    body.set('message', 'with files');
    body.append('files', new Blob([first], { type: 'application/octet-stream' }), 'data.bin');
    body.append('files', new Blob([second], { type: 'text/plain' }), 'notes.txt');
    const response = await fetch(`${h.url}/api/contact-api/`, { method: 'POST', body, headers: { accept: 'application/json' } });
    const json = (await response.json()) as any;
    expect(json.attachments).toBe(2);
    const mail = await mailFor(json.submission_id);
    expect(mail.parsed.attachments.map((a) => [a.filename, sha256(a.content)])).toEqual([
      ['data.bin', sha256(first)],
      ['notes.txt', sha256(second)],
    ]);
  });

  it('links files past ATTACH_MAX_BYTES with presigned URLs instead of attaching them', async () => {
    const small = await startHarness({ env: { ATTACH_MAX_BYTES: '1000', LINK_TTL_SECONDS: '3600' } });
    try {
      const owner = await small.createKey();
      const content = Buffer.alloc(5_000, 3);
      const body = new FormData();
      body.set('access_key', owner.key);
      body.set('email', 'visitor@example.org');
      body.set('message', 'big file');
      body.append('file', new Blob([content]), 'big.bin');
      const response = await fetch(`${small.url}/api/contact-api/`, { method: 'POST', body, headers: { accept: 'application/json' } });
      const id = ((await response.json()) as any).submission_id;
      const mail = await mailFor(id, small.sink);
      expect(mail.parsed.attachments).toHaveLength(0);
      const link = /https?:\/\/\S+big\.bin\S*/.exec(mail.parsed.text ?? '')?.[0];
      expect(link).toContain('X-Amz-Expires=3600');
      const download = await fetch(link!);
      expect(download.status).toBe(200);
      expect(sha256(Buffer.from(await download.arrayBuffer()))).toBe(sha256(content));
    } finally {
      await small.stop();
    }
  });
});

describe('stored files', () => {
  it('are stored and linked as downloads of a passive type, whatever type the client declared', async () => {
    const small = await startHarness({ env: { ATTACH_MAX_BYTES: '10' } });
    try {
      const owner = await small.createKey();
      const files = [
        ['page.html', 'text/html', '<script>alert(document.domain)</script>', 'application/octet-stream'],
        ['logo.svg', 'image/svg+xml', '<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>', 'application/octet-stream'],
        ['feed.xml', 'application/xhtml+xml', '<html xmlns="http://www.w3.org/1999/xhtml"><script>alert(1)</script></html>', 'application/octet-stream'],
        ['photo.png', 'image/png', 'not really a png', 'image/png'],
      ] as const;
      const body = new FormData();
      body.set('access_key', owner.key);
      body.set('email', 'visitor@example.org');
      body.set('message', 'files of every kind');
      for (const [name, type, content] of files) body.append('file', new Blob([content], { type }), name);
      const response = await fetch(`${small.url}/api/contact-api/`, { method: 'POST', body, headers: { accept: 'application/json' } });
      const id = ((await response.json()) as any).submission_id;
      const mail = await mailFor(id, small.sink);
      for (const [name, , content, served] of files) {
        const link = new RegExp(`https?://\\S+${name.replace('.', '\\.')}\\S*`).exec(mail.parsed.text ?? '')?.[0];
        const download = await fetch(link!);
        expect(download.status).toBe(200);
        expect(download.headers.get('content-type')).toBe(served);
        expect(download.headers.get('content-disposition')).toBe(`attachment; filename*=UTF-8''${name}`);
        expect(await download.text()).toBe(content);
      }
      // The objects themselves, should the bucket be reached another way.
      const [row] = await small.sql<{ storage_key: string }>(`select storage_key from attachments where submission_id = $1 and filename = 'page.html'`, [id]);
      const head = await small.storage.client.send(new HeadObjectCommand({ Bucket: small.storage.bucket, Key: row!.storage_key }));
      expect(head.ContentType).toBe('application/octet-stream');
      expect(head.ContentDisposition).toBe('attachment');
    } finally {
      await small.stop();
    }
  });
});

describe('retries and statuses', () => {
  it('retries a 451 twice and ends `sent` after 3 attempts', async () => {
    let refusals = 0;
    h.sink.behave(() => (refusals++ < 2 ? { code: 451, message: 'Try again later' } : undefined));
    try {
      const id = (await submit({ message: 'retry me' })).json.submission_id;
      const retrying = await untilStatus(id, 'retrying');
      expect(retrying.last_error).toContain('451');
      const sent = await untilStatus(id, 'sent');
      expect(sent.email_attempts).toBe(3);
      expect(sent.last_error).toBeNull();
    } finally {
      h.sink.behave(undefined);
    }
  });

  it('does not retry a 550: `failed` after one attempt, with the reply as last error', async () => {
    h.sink.behave(() => ({ code: 550, message: 'Mailbox unavailable' }));
    try {
      const id = (await submit({ message: 'fail me' })).json.submission_id;
      const failed = await untilStatus(id, 'failed');
      expect(failed.email_attempts).toBe(1);
      expect(failed.last_error).toContain('550');
      expect(failed.last_error).toContain('Mailbox unavailable');
      // The job ended for good (BullMQ's failed set): no attempt of it can follow.
      await eventually(async () => ((await h.api.deps.queue.getJobState(id)) === 'failed' ? true : undefined), 10_000, 'the job in the failed set');
      expect((await statusOf(id)).email_attempts).toBe(1);
    } finally {
      h.sink.behave(undefined);
    }
  });

  it('ends `failed` when EMAIL_MAX_ATTEMPTS transient failures are used up', async () => {
    h.sink.behave(() => ({ code: 421, message: 'Service not available' }));
    try {
      const id = (await submit({ message: 'always deferred' })).json.submission_id;
      const failed = await untilStatus(id, 'failed');
      expect(failed.email_attempts).toBe(4);
      expect(failed.last_error).toContain('421');
    } finally {
      h.sink.behave(undefined);
    }
  });

  it('retried from the queue dashboard, a failed row is a fresh delivery: its attempts and its horizon start again', async () => {
    h.sink.behave(() => ({ code: 421, message: 'Service not available' }));
    const redis = new Redis(h.config.REDIS_URL, { maxRetriesPerRequest: null });
    const queue = createDeliveryQueue<DeliveryJob>(redis, h.config);
    try {
      const id = (await submit({ message: 'failed, then retried by an operator' })).json.submission_id;
      expect((await untilStatus(id, 'failed')).email_attempts).toBe(4);
      // Past the retry horizon (5 days) as well as the attempt limit (4).
      await updateSubmission(h, id, { createdAt: ago({ days: 6 }) });
      // The server greylists the first try after the retry, as many do.
      let refusals = 0;
      h.sink.behave(() => (refusals++ < 1 ? { code: 451, message: 'Greylisted, come back later' } : undefined));
      // What "Retry" on the queue dashboard does, once BullMQ has moved the job to the failed set
      // (the row says `failed` a moment before).
      const job = await eventually(async () => {
        const found = await queue.getJob(id);
        return found && (await found.isFailed()) ? found : undefined;
      });
      await job.retry('failed');
      const sent = await untilStatus(id, 'sent');
      expect(sent.email_attempts).toBe(2);
      expect(sent.requeued_at).toBeInstanceOf(Date);
      await mailFor(id);
    } finally {
      h.sink.behave(undefined);
      await queue.close();
      redis.disconnect();
    }
  });

  it('retries a 451 until the row is older than EMAIL_RETRY_HORIZON_MS, then `failed` with the last reply', async () => {
    // An attempt limit out of reach: the horizon alone ends the retries.
    const short = await startHarness({
      env: { EMAIL_MAX_ATTEMPTS: '1000', EMAIL_RETRY_HORIZON_MS: '1500', EMAIL_RETRY_BACKOFF_MS: '100', EMAIL_RETRY_MAX_BACKOFF_MS: '300' },
    });
    try {
      short.sink.behave(() => ({ code: 451, message: 'Greylisted, come back later' }));
      const owner = await short.createKey();
      const id = (await submitJson(short, { access_key: owner.key, email: 'a@example.org', message: 'deferred' })).json.submission_id;
      const failed = await untilStatus(id, 'failed', short);
      expect(failed.last_error).toContain('451');
      expect(failed.last_error).toContain('Greylisted');
      // Past the horizon, not after a count: retried for 1.5 s, every 50-300 ms.
      expect(failed.email_attempts).toBeGreaterThan(2);
      const age = await short.sql<{ seconds: number }>('select extract(epoch from now() - created_at)::float as seconds from submissions where id = $1', [id]);
      expect(age[0]!.seconds).toBeGreaterThan(1.5);
    } finally {
      await short.stop();
    }
  });

  it('delivers once the SMTP server is back after being down longer than the first backoff', async () => {
    const port = h.sink.port;
    await h.sink.close();
    const id = (await submit({ message: 'while smtp is down' })).json.submission_id;
    const retrying = await untilStatus(id, 'retrying');
    expect(retrying.last_error).toMatch(/ECONNREFUSED|connect/i);
    // The outage held on purpose past the first backoff (EMAIL_RETRY_BACKOFF_MS, 150 ms).
    await sleep(400);
    const revived = await startSmtpSink(port);
    try {
      await untilStatus(id, 'sent');
      await mailFor(id, revived);
    } finally {
      await revived.close();
      h.sink = await startSmtpSink(port);
    }
  });
});

describe('operator view', () => {
  it('shows one submission with its delivery status', async () => {
    const id = (await submit({ subject: 'Admin view', topic: 'support' })).json.submission_id;
    await untilStatus(id, 'sent');
    const { status, json } = await admin('GET', `/admin/submissions/${id}`);
    expect(status).toBe(200);
    expect(json).toEqual({
      submission_id: id,
      key_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      key: key.key,
      recipient: 'owner@example.test',
      message_id: `<submission-${id}@example.test>`,
      email_status: 'sent',
      email_attempts: 1,
      last_error: null,
      last_attempt_at: expect.stringMatching(/^\d{4}-/),
      next_attempt_at: null,
      delivery_attempts: [
        {
          attempt: 1,
          at: expect.stringMatching(/^\d{4}-/),
          outcome: 'sent',
          response: expect.stringMatching(/^250 /),
          worker: expect.stringMatching(/^.+:\d+$/),
        },
      ],
      delivery_attempts_total: 1,
      bounce: null,
      spam: null,
      // The key sends no autoresponse: `off`, written with `sent`.
      autoresponse: 'off',
      sent_at: expect.stringMatching(/^\d{4}-/),
      created_at: expect.stringMatching(/^\d{4}-/),
      email: 'visitor@example.org',
      subject: 'Admin view',
      message: 'Hello',
      custom_fields: [{ name: 'topic', value: 'support' }],
      attachments: [],
      // The key has no added recipients: no copies.
      copies: [],
    });
    expect((await admin('GET', '/admin/submissions/00000000-0000-4000-8000-000000000000')).status).toBe(404);
  });

  it('lists submissions newest first, filtered, paged by cursor', async () => {
    const other = await h.createKey();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await submit({ access_key: other.key, message: `page ${i}`, not_email_sent: true })).json.submission_id);
    const first = await admin('GET', `/admin/submissions?key=${other.key}&limit=2`);
    expect(first.json.submissions.map((s: any) => s.submission_id)).toEqual([ids[4], ids[3]]);
    const second = await admin('GET', `/admin/submissions?key=${other.key}&limit=2&cursor=${first.json.next_cursor}`);
    expect(second.json.submissions.map((s: any) => s.submission_id)).toEqual([ids[2], ids[1]]);
    const third = await admin('GET', `/admin/submissions?key=${other.key}&limit=2&cursor=${second.json.next_cursor}`);
    expect(third.json.submissions.map((s: any) => s.submission_id)).toEqual([ids[0]]);
    expect(third.json.next_cursor).toBeNull();
    const skipped = await admin('GET', `/admin/submissions?key=${other.key}&status=skipped&limit=200`);
    expect(skipped.json.submissions).toHaveLength(5);
    expect((await admin('GET', `/admin/submissions?key=${other.key}&status=sent`)).json.submissions).toHaveLength(0);
    expect((await admin('GET', '/admin/submissions?status=nope')).status).toBe(400);
    expect((await admin('GET', '/admin/submissions?cursor=garbage')).status).toBe(400);
  });
});

describe('EMAIL_STATUS_WAIT_MS', () => {
  it('answers with the delivery outcome when waiting is configured', async () => {
    const waiting = await startHarness({ env: { EMAIL_STATUS_WAIT_MS: '10000' } });
    try {
      const owner = await waiting.createKey();
      const response = await submitJson(waiting, { access_key: owner.key, email: 'a@example.org', message: 'wait' });
      expect(response.json.email_status).toBe('sent');
    } finally {
      await waiting.stop();
    }
  });
});

describe('DKIM', () => {
  it('signs every email when DKIM_DOMAIN, DKIM_SELECTOR and DKIM_PRIVATE_KEY are set', async () => {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString().replace(/\n/g, '\\n');
    const signed = await startHarness({ env: { DKIM_DOMAIN: 'example.test', DKIM_SELECTOR: 'forms2026', DKIM_PRIVATE_KEY: pem } });
    try {
      const owner = await signed.createKey();
      const id = (await submitJson(signed, { access_key: owner.key, email: 'a@example.org', message: 'signed' })).json.submission_id;
      const mail = await mailFor(id, signed.sink);
      const signature = /^DKIM-Signature:.*(?:\r\n[ \t].*)*/m.exec(mail.raw.toString('utf8'))?.[0] ?? '';
      expect(signature).toMatch(/\bd=example\.test;/);
      expect(signature).toMatch(/\bs=forms2026;/);
    } finally {
      await signed.stop();
    }
  });
});
