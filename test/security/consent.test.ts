// Recipient consent and storage bounds: anyone can create a key for any address, so an address that
// has not confirmed receives a few submission emails an hour and the rest are held until it
// confirms; caps count per mailbox; keys have a storage quota; unconfirmed leftovers expire.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/shared/infra/config.ts';
import { ago, buildAllowance, buildRecipient, updateSubmission } from '../support/factories.ts';
import { eventually, listObjectKeys, postJson, startHarness, TEST_SECRET, type Harness } from '../support/harness.ts';
import { emailStatusOf, mailSettled } from '../support/rows.ts';
import { request } from '../support/http.ts';
import { submitJson } from '../support/client.ts';

const ALLOWANCE = 3;
let h: Harness;
beforeAll(async () => {
  h = await startHarness({
    env: { UNCONFIRMED_EMAILS_PER_HOUR: String(ALLOWANCE), KEY_STORAGE_QUOTA_MB: '1', RETENTION_INTERVAL_MS: '300' },
  });
});
afterAll(() => h?.stop());

const submit = (key: string, fields: Record<string, unknown> = {}) =>
  submitJson(h, { access_key: key, email: 'sender@example.org', message: 'hello', ...fields });
const newKey = async (email: string) => {
  const response = await postJson(`${h.url}/`, { email });
  expect(response.status).toBe(200);
  return response.json.key as string;
};
const mailTo = (mailbox: string, subject: string) =>
  h.sink.messages.filter((mail) => mail.envelope.to.some((to) => to.toLowerCase().replace(/\+[^@]*@/, '@') === mailbox) && mail.parsed.subject === subject);
const statusOf = (id: string) => emailStatusOf(h, id);
const CONFIRM_SUBJECT = 'Confirm to receive your contact form messages';
const KEY_SUBJECT = 'Your contact form verification key';

function confirmLinkIn(text: string): URL {
  const match = /(http\S+\/confirm\?\S+)/.exec(text);
  if (!match) throw new Error(`no confirm link in:\n${text}`);
  return new URL(match[1]!);
}

async function postForm(path: string, fields: Record<string, string>, headers: Record<string, string> = {}) {
  return request(`${h.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(fields).toString(),
  });
}

function multipartWith(key: string, bytes: number, notEmailSent: boolean): FormData {
  const body = new FormData();
  body.set('access_key', key);
  body.set('email', 'sender@example.org');
  body.set('message', 'with a file');
  if (notEmailSent) body.set('not_email_sent', 'true');
  body.append('file', new Blob([Buffer.alloc(bytes, 7)]), 'file.bin');
  return body;
}
const submitMultipart = async (body: FormData) => {
  const response = await fetch(`${h.url}/api/contact-api/`, { method: 'POST', body, headers: { accept: 'application/json' } });
  return { status: response.status, json: (await response.json()) as any };
};

describe('an address that has not confirmed', () => {
  it("gets a fresh key's first submissions at once, then holds the rest (200, held) and asks once to confirm, per mailbox", async () => {
    const mailbox = 'victim@example.org';
    const key = await newKey(mailbox);
    const keyEmail = await eventually(async () => mailTo(mailbox, KEY_SUBJECT)[0]);
    expect(keyEmail.parsed.text).toContain('/confirm?');

    const first: Array<Awaited<ReturnType<typeof submit>>> = [];
    for (let i = 0; i < ALLOWANCE; i++) first.push(await submit(key));
    expect(first.map((response) => [response.status, response.json.email_status])).toEqual(Array(ALLOWANCE).fill([200, 'queued']));
    await eventually(
      async () => (await Promise.all(first.map((response) => statusOf(response.json.submission_id)))).every((status) => status === 'sent') || undefined,
    );

    // Past the allowance, and from another spelling of the same mailbox: saved, answered, held.
    const otherSpelling = await newKey('Victim+shop@Example.org');
    const held = [await submit(key), await submit(otherSpelling), await submit(key, { subject: 'third held' })];
    expect(held.map((response) => [response.status, response.json.success, response.json.email_status])).toEqual(Array(3).fill([200, true, 'held']));
    for (const response of held) expect(await statusOf(response.json.submission_id)).toBe('held');

    const confirm = await eventually(async () => mailTo(mailbox, CONFIRM_SUBJECT)[0]);
    expect(confirm.parsed.text).toContain('/confirm?');
    // Only the allowed ones went out, and the confirmation request only once: every email taken on is sent or held.
    await mailSettled(h);
    expect(
      h.sink.messages.filter((mail) => mail.parsed.subject?.startsWith('New contact form submission') && mail.envelope.to.some((to) => /victim/i.test(to))),
    ).toHaveLength(ALLOWANCE);
    expect(mailTo(mailbox, CONFIRM_SUBJECT)).toHaveLength(1);
  });

  it("confirms only through the page's POST with a valid token, then delivers what was held and everything after", async () => {
    const mailbox = 'victim@example.org';
    const link = confirmLinkIn(mailTo(mailbox, CONFIRM_SUBJECT)[0]!.parsed.text!);
    const heldIds = (
      await h.sql(`select s.id from submissions s join verification_keys k on k.id = s.key_id where k.mailbox = $1 and s.email_status = 'held'`, [mailbox])
    ).map((row: any) => row.id);
    expect(heldIds).toHaveLength(3);

    // A mail scanner fetching the link changes nothing.
    // (PUBLIC_URL names port 0 in the harness: the API's real port is in h.url.)
    const page = await request(`${h.url}${link.pathname}${link.search}`);
    expect(page.status).toBe(200);
    expect(page.text).toContain('<form method="POST" action="/confirm">');
    const stillHeld = async () => (await Promise.all(heldIds.map(statusOf))).every((status) => status === 'held');
    expect(await stillHeld()).toBe(true);

    // A forged or borrowed token confirms nothing.
    const params = Object.fromEntries(link.searchParams) as { address: string; token: string };
    expect((await postForm('/confirm', { ...params, token: `${params.token.slice(0, -2)}xx` })).status).toBe(400);
    expect((await postForm('/confirm', { ...params, address: 'someone-else@example.org' })).status).toBe(400);
    // A valid link padded past the 200-field bound of a body is refused before it is read.
    const padded = { ...params, ...Object.fromEntries(Array.from({ length: 199 }, (_, i) => [`pad${i}`, 'x'])) };
    const overLimit = await postForm('/confirm', padded);
    expect(overLimit.status).toBe(400);
    expect(overLimit.json).toMatchObject({ success: false, errors: { __all__: ['Too many fields: at most 200 per request.'] } });
    expect(await stillHeld()).toBe(true);

    const confirmed = await postForm('/confirm', params);
    expect(confirmed.status).toBe(200);
    expect(confirmed.text).toContain('3 waiting messages are on the way');
    await eventually(async () => (await Promise.all(heldIds.map(statusOf))).every((status) => status === 'sent') || undefined);

    // Confirmation lasts and covers every spelling: no allowance any more.
    const key = await newKey('VICTIM+later@example.org');
    const after: string[] = [];
    for (let i = 0; i < ALLOWANCE + 2; i++) after.push((await submit(key)).json.email_status);
    expect(after).toEqual(Array(ALLOWANCE + 2).fill('queued'));
    const again = await newKey(mailbox);
    const keyEmail = await eventually(async () => mailTo(mailbox, KEY_SUBJECT).find((mail) => mail.parsed.text?.includes(again)));
    expect(keyEmail.parsed.text).not.toContain('/confirm?');
  });

  it('gives a submission released days after it was held the whole retry horizon from its release', async () => {
    const mailbox = 'late-confirmer@example.org';
    const key = await newKey(mailbox);
    for (let i = 0; i < ALLOWANCE; i++) expect((await submit(key)).json.email_status).toBe('queued');
    const held = await submit(key, { message: 'held for days' });
    expect(held.json.email_status).toBe('held');
    const id = held.json.submission_id as string;
    // Held for 6 days: past the 5-day retry horizon counted from its creation.
    await updateSubmission(h, id, { createdAt: ago({ days: 6 }) });
    const link = confirmLinkIn((await eventually(async () => mailTo(mailbox, CONFIRM_SUBJECT)[0])).parsed.text!);
    h.sink.refuse('rcpt-to', { code: 451, message: '4.3.0 Try again later' });
    try {
      expect((await postForm('/confirm', Object.fromEntries(link.searchParams))).status).toBe(200);
      // A temporary refusal right after the release is retried, not a final failure.
      const row = await eventually(
        async () => {
          const [current] = await h.sql<any>('select email_status, email_attempts from submissions where id = $1', [id]);
          return current.email_attempts >= 1 && current.email_status !== 'sending' ? current : undefined;
        },
        20_000,
        'the first attempt after the release',
      );
      expect(row.email_status).toBe('retrying');
    } finally {
      h.sink.refuse('rcpt-to', undefined);
    }
    await eventually(async () => ((await statusOf(id)) === 'sent' ? true : undefined), 30_000, 'the released submission to be sent');
  });

  it('counts skipped submissions with files under the allowance and refuses them past it, leaving nothing behind', async () => {
    const key = await newKey('files-only@example.org');
    const without = await submit(key, { not_email_sent: true });
    expect([without.status, without.json.email_status]).toEqual([200, 'skipped']);
    for (let i = 0; i < ALLOWANCE; i++) expect((await submitMultipart(multipartWith(key, 1000, true))).json.email_status).toBe('skipped');
    const objectsBefore = (await listObjectKeys(h.storage)).length;
    const rowsBefore = await h.sql('select count(*)::int as n from submissions');

    const refused = await submitMultipart(multipartWith(key, 1000, true));
    expect(refused.status).toBe(429);
    expect(refused.json).toMatchObject({ success: false, errors: { __all__: [expect.stringContaining('has not confirmed')] } });
    expect((await listObjectKeys(h.storage)).length).toBe(objectsBefore);
    expect(await h.sql('select count(*)::int as n from submissions')).toEqual(rowsBefore);
  });
});

describe('key storage quota', () => {
  it('refuses files past KEY_STORAGE_QUOTA_MB with 413 and no leftovers, and gives the bytes back when submissions go', async () => {
    const key = await h.createKey();
    await buildRecipient(h, { mailbox: key.mailbox });
    const kept = await submitMultipart(multipartWith(key.key, 600 * 1024, true));
    expect(kept.status).toBe(200);
    const objectsBefore = (await listObjectKeys(h.storage)).length;

    const refused = await submitMultipart(multipartWith(key.key, 600 * 1024, true));
    expect(refused.status).toBe(413);
    expect(refused.json).toEqual({
      success: false,
      message: "This key's storage quota (1 MB of files) is full.",
      errors: { __all__: ["This key's storage quota (1 MB of files) is full."] },
    });
    expect((await listObjectKeys(h.storage)).length).toBe(objectsBefore);
    expect(await h.sql('select count(*)::int as n from submissions where key_id = $1', [key.id])).toEqual([{ n: 1 }]);
    expect(await h.sql('select stored_bytes::int as n from verification_keys where id = $1', [key.id])).toEqual([{ n: 600 * 1024 }]);
  });

  it('refuses files past the quota for an unconfirmed mailbox too, whose admission writes roll back with the 413', async () => {
    const key = await h.createKey();
    expect((await submitMultipart(multipartWith(key.key, 600 * 1024, true))).status).toBe(200);
    const allowance = () => h.sql('select used from mailbox_allowances where mailbox = (select mailbox from verification_keys where id = $1)', [key.id]);
    expect(await allowance()).toEqual([{ used: 1 }]);

    const refused = await submitMultipart(multipartWith(key.key, 600 * 1024, true));
    expect(refused.status).toBe(413);
    expect(refused.json.message).toBe("This key's storage quota (1 MB of files) is full.");
    expect(await h.sql('select count(*)::int as n from submissions where key_id = $1', [key.id])).toEqual([{ n: 1 }]);
    expect(await h.sql('select stored_bytes::int as n from verification_keys where id = $1', [key.id])).toEqual([{ n: 600 * 1024 }]);
    expect(await allowance()).toEqual([{ used: 1 }]);
  });
});

describe('key storage quota under concurrent uploads', () => {
  it('accepts only what fits when submissions with files arrive together; each 413 leaves nothing, each 200 is committed', async () => {
    const key = await h.createKey();
    await buildRecipient(h, { mailbox: key.mailbox });
    const objectsBefore = new Set(await listObjectKeys(h.storage));
    // 6 × 400 KB on a 1 MB quota: two fit, whichever they are.
    const results = await Promise.all(
      Array.from({ length: 6 }, async () => {
        const response = await submitMultipart(multipartWith(key.key, 400 * 1024, true));
        const id = response.json.submission_id as string | undefined;
        const committed = id ? (await h.sql('select count(*)::int as n from attachments where submission_id = $1', [id]))[0]!.n : 0;
        return { status: response.status, id, committed };
      }),
    );
    const accepted = results.filter((result) => result.status === 200);
    expect(results.map((result) => result.status).sort()).toEqual([200, 200, 413, 413, 413, 413]);
    expect(accepted.map((result) => result.committed)).toEqual([1, 1]);
    expect(await h.sql('select stored_bytes::int as n from verification_keys where id = $1', [key.id])).toEqual([{ n: 800 * 1024 }]);
    expect(await h.sql('select count(*)::int as n from submissions where key_id = $1', [key.id])).toEqual([{ n: 2 }]);
    const added = (await listObjectKeys(h.storage)).filter((objectKey) => !objectsBefore.has(objectKey));
    expect(added.sort()).toEqual(
      (await h.sql('select storage_key from attachments a join submissions s on s.id = a.submission_id where s.key_id = $1', [key.id]))
        .map((row) => row.storage_key)
        .sort(),
    );
  });
});

describe('expiry of what unconfirmed addresses never asked for', () => {
  it('deletes held submissions after HELD_TTL_DAYS and unconfirmed skipped ones after UNCONFIRMED_SKIPPED_TTL_DAYS, with their files', async () => {
    const config = loadConfig({ DATABASE_URL: 'postgres://x/y', REDIS_URL: 'redis://x', SMTP_URL: 'smtp://x', SECRET: TEST_SECRET });
    const unconfirmed = await h.createKey({ email: 'never-confirms@example.org' });
    const confirmed = await h.createKey({ email: 'confirmed-owner@example.org' });
    await buildRecipient(h, { mailbox: confirmed.mailbox });

    const skippedOld = (await submitMultipart(multipartWith(unconfirmed.key, 100, true))).json.submission_id;
    const skippedConfirmedOld = (await submitMultipart(multipartWith(confirmed.key, 100, true))).json.submission_id;
    // The hour's allowance spent: the next submissions are held for real.
    await buildAllowance(h, { mailbox: unconfirmed.mailbox, used: ALLOWANCE });
    const heldOld = await submitMultipart(multipartWith(unconfirmed.key, 100, false));
    const heldRecent = await submitMultipart(multipartWith(unconfirmed.key, 100, false));
    expect([heldOld.json.email_status, heldRecent.json.email_status]).toEqual(['held', 'held']);
    const objectsOf = async (id: string) => (await listObjectKeys(h.storage)).filter((objectKey) => objectKey.includes(id));
    // Its file is stored; seen before it is aged, since the job runs every 300 ms.
    expect(await objectsOf(heldOld.json.submission_id)).toHaveLength(1);
    await updateSubmission(h, heldOld.json.submission_id, { createdAt: ago({ days: config.HELD_TTL_DAYS + 1 }) });
    for (const id of [skippedOld, skippedConfirmedOld]) {
      await updateSubmission(h, id, { createdAt: ago({ days: config.UNCONFIRMED_SKIPPED_TTL_DAYS + 1 }) });
    }

    const exists = async (id: string) => (await h.sql('select 1 from submissions where id = $1', [id])).length === 1;
    await eventually(async () => (!(await exists(heldOld.json.submission_id)) && !(await exists(skippedOld))) || undefined, 15_000, 'expiry');
    expect(await objectsOf(heldOld.json.submission_id)).toEqual([]);
    expect(await objectsOf(skippedOld)).toEqual([]);
    expect(await exists(heldRecent.json.submission_id)).toBe(true);
    expect(await exists(skippedConfirmedOld)).toBe(true);
    expect(await h.sql('select stored_bytes::int as n from verification_keys where id = $1', [unconfirmed.id])).toEqual([{ n: 100 }]);
  });
});

describe("the spec's key flows with the default caps", () => {
  it("lets one address create its 10 keys within minutes; the 11th gets the spec's 400 and sends nothing", async () => {
    const defaults = loadConfig({ DATABASE_URL: 'postgres://x/y', REDIS_URL: 'redis://x', SMTP_URL: 'smtp://x', SECRET: TEST_SECRET });
    expect(defaults.KEY_EMAILS_PER_HOUR).toBeGreaterThanOrEqual(12);
    const other = await startHarness({ env: { KEY_EMAILS_PER_HOUR: String(defaults.KEY_EMAILS_PER_HOUR) } });
    try {
      const email = 'ten-keys@example.org';
      for (let i = 1; i <= 10; i++) {
        const created = await postJson(`${other.url}/`, { email });
        expect([created.status, created.json.keys_count]).toEqual([200, i]);
      }
      const eleventh = await postJson(`${other.url}/`, { email });
      expect(eleventh.status).toBe(400);
      expect(eleventh.json).toEqual({ error: 'You have reached the maximum of 10 active keys.' });
      expect(await other.sql('select count(*)::int as n from key_emails where mailbox = $1', [email])).toEqual([{ n: 10 }]);
      // Room is left for getKeys.
      expect((await postJson(`${other.url}/`, { email, requestType: 'getKeys' })).status).toBe(200);
    } finally {
      await other.stop();
    }
  });
});
