// The owner console through HTTP: sign in by an emailed link, the keys and their
// settings, each message's delivery status, files, re-send, delete, CSV, the JSON API, sign out;
// and the isolation between owners, the links that must not sign anyone in, and CSRF.
import { createHash, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ago, buildAllowance, expireOwnerSessions, expireSignInLinks, updateSubmission } from '../support/factories.ts';
import { eventually, listObjectKeys, postJson, startHarness, type Harness } from '../support/harness.ts';
import { emailStatusOf, keyStatusOf, submissionExists } from '../support/rows.ts';
import { request } from '../support/http.ts';
import { submitJson } from '../support/client.ts';
import { askForLink, csrfIn, ownerClient, postForm, sessionCookieOf, signIn, signInMailsTo, type OwnerClient } from '../support/owner.ts';

const CAP = 4;
let h: Harness;
beforeAll(async () => {
  h = await startHarness({ env: { KEY_EMAILS_PER_HOUR: String(CAP), SIGN_IN_EMAILS_PER_HOUR: String(CAP), RETENTION_INTERVAL_MS: '300' } });
});
afterAll(() => h?.stop());

const FILE = Buffer.from(Array.from({ length: 70_000 }, (_, i) => (i * 31 + 7) % 256));

async function submitWithFile(key: string, message: string) {
  const body = new FormData();
  body.set('access_key', key);
  body.set('email', 'visitor@example.org');
  body.set('subject', `About ${message}`);
  body.set('message', message);
  body.append('zeta', 'first custom');
  body.append('alpha', 'second custom');
  body.append('attachment', new Blob([FILE], { type: 'image/png' }), 'photo.png');
  const response = await fetch(`${h.url}/api/contact-api/`, { method: 'POST', body, headers: { accept: 'application/json' } });
  const json = (await response.json()) as { submission_id: string };
  expect(response.status).toBe(200);
  return json.submission_id;
}

const submit = async (key: string, message: string) => {
  const response = await submitJson(h, { access_key: key, email: 'visitor@example.org', message });
  expect(response.status).toBe(200);
  return response.json.submission_id as string;
};

/** The whole record of one submission on its message page. */
const cardOf = (html: string, id: string) => {
  const start = html.indexOf(`id="s-${id}"`);
  return start < 0 ? '' : html.slice(start, html.indexOf('</article>', start));
};
/** The line of one submission in its key's list. */
const rowOf = (html: string, id: string) => {
  const start = html.indexOf(`id="s-${id}"`);
  return start < 0 ? '' : html.slice(start, html.indexOf('</tr>', start));
};
/** The status chip of a submission, on its list's line or on its page. */
const statusOn = (html: string, id: string) => {
  const start = html.indexOf(`id="s-${id}"`);
  return start < 0 ? undefined : /data-field="status"[^>]*>(\w+)</.exec(html.slice(start))?.[1];
};

describe('signing in', () => {
  it('answers the same whether or not the address holds keys, and emails only an address that does', async () => {
    const owner = await h.createKey();
    const stranger = `nobody-${randomUUID()}@example.test`;
    const page = async (email: string) => (await postForm(h, '/owner/sign-in', { email })).text.replaceAll(email, 'ADDRESS');
    const [ownerPage, strangerPage] = [await page(owner.email), await page(stranger)];
    expect(ownerPage).toBe(strangerPage);
    expect(ownerPage).toContain('a sign-in link is on its way');

    const json = async (email: string) => {
      const response = await postJson(`${h.url}/owner/sign-in`, { email });
      return { status: response.status, body: JSON.stringify(response.json).replaceAll(email, 'ADDRESS') };
    };
    expect(await json(owner.email)).toEqual(await json(stranger));

    await eventually(async () => (signInMailsTo(h, owner.email).length === 2 ? true : undefined));
    expect(await h.sql('select count(*)::int as n from key_emails where email = $1', [stranger])).toEqual([{ n: 0 }]);
    // The email travelled the queue as a row with a status, like the key emails.
    // `sent` is recorded just after the SMTP server's answer (in batches), so wait for it.
    const rows = await eventually(async () => {
      const found = await h.sql("select email_status, email_attempts from key_emails where kind = 'sign-in' and email = $1", [owner.email]);
      return found.every((row: any) => row.email_status === 'sent') ? found : undefined;
    });
    expect(rows).toEqual([
      { email_status: 'sent', email_attempts: 1 },
      { email_status: 'sent', email_attempts: 1 },
    ]);
  });

  it('refuses an invalid address with the form re-shown (400), and JSON in the error shape', async () => {
    const page = await postForm(h, '/owner/sign-in', { email: 'not-an-address' });
    expect(page.status).toBe(400);
    expect(page.text).toContain('Enter a valid email address.');
    const json = await postJson(`${h.url}/owner/sign-in`, { email: 'nope' });
    expect(json.status).toBe(400);
    expect(json.json).toMatchObject({ success: false, errors: { email: ['Enter a valid email address.'] } });
  });

  it('counts sign-in emails under their own per-mailbox allowance, and still answers the same past it', async () => {
    const owner = await h.createKey();
    for (let i = 0; i < CAP + 2; i++) {
      const response = await postJson(`${h.url}/owner/sign-in`, { email: owner.email });
      expect(response.status).toBe(200);
    }
    expect(await h.sql('select count(*)::int as n from key_emails where email = $1', [owner.email])).toEqual([{ n: CAP }]);
  });

  it('stores the link token hashed; GET of the link consumes nothing; the POST signs in once with a 7-day HttpOnly Lax cookie', async () => {
    const owner = await h.createKey();
    const link = await askForLink(h, owner.email);
    const token = link.searchParams.get('token')!;
    const [row] = await h.sql('select token_hash, token_sealed from owner_sign_ins where email = $1', [owner.email]);
    expect(row!.token_hash).toBe(createHash('sha256').update(token).digest('hex'));
    expect(JSON.stringify(row)).not.toContain(token);

    for (let i = 0; i < 2; i++) {
      const shown = await request(link.toString());
      expect(shown.status).toBe(200);
      expect(shown.text).toContain('<form method="POST" action="/owner/link">');
      expect(shown.headers['set-cookie']).toBeUndefined();
    }
    const used = await postForm(h, '/owner/link', { token });
    expect(used.status).toBe(303);
    expect(used.headers.location).toBe('/owner/keys');
    const cookie = [used.headers['set-cookie']].flat().join('');
    expect(cookie).toMatch(/^owner_session=[\w-]{43}; Path=\/owner; Max-Age=604800; HttpOnly; SameSite=Lax$/);
    const [session] = await h.sql('select token_hash, email from owner_sessions where email = $1', [owner.email]);
    expect(session!.token_hash).toBe(createHash('sha256').update(sessionCookieOf(used)!).digest('hex'));

    const again = await postForm(h, '/owner/link', { token });
    expect(again.status).toBe(400);
    expect(again.headers['set-cookie']).toBeUndefined();
    expect(again.text).toContain('This sign-in link is not valid');
  });

  it('signs nobody in with a used, expired or forged link (pages and JSON)', async () => {
    const owner = await h.createKey();
    const expired = (await askForLink(h, owner.email)).searchParams.get('token')!;
    await expireSignInLinks(h, owner.email);
    const used = (await askForLink(h, owner.email)).searchParams.get('token')!;
    expect((await postForm(h, '/owner/link', { token: used })).status).toBe(303);
    const forged = Buffer.alloc(32, 1).toString('base64url');
    for (const token of [expired, used, forged, '']) {
      const page = await postForm(h, '/owner/link', { token });
      expect(page.status).toBe(400);
      expect(page.headers['set-cookie']).toBeUndefined();
      const json = await postJson(`${h.url}/owner/api/session`, { token });
      expect(json.status).toBe(400);
      expect(json.headers.get('set-cookie')).toBeNull();
    }
  });

  it('an expired session is refused, and expired sessions and links are deleted by housekeeping', async () => {
    const owner = await h.createKey();
    const client = await signIn(h, owner.email);
    await askForLink(h, owner.email); // a link left unused
    await expireOwnerSessions(h, owner.email);
    await expireSignInLinks(h, owner.email);
    expect((await client.api('GET', '/keys')).status).toBe(401);
    expect((await client.get('/owner/keys')).status).toBe(303);
    await eventually(
      async () => {
        const [left] = await h.sql(
          'select (select count(*) from owner_sessions where email = $1)::int + (select count(*) from owner_sign_ins where email = $1)::int as n',
          [owner.email],
        );
        return left!.n === 0 ? true : undefined;
      },
      20_000,
      'expired sessions and links deleted',
    );
  });
});

describe('the whole journey', () => {
  let owner: Awaited<ReturnType<Harness['createKey']>>;
  let client: OwnerClient;
  let firstId: string;
  let failedId: string;
  const page = () => client.get(`/owner/keys/${owner.id}/submissions`);
  const message = (id: string) => client.get(`/owner/submissions/${id}`);

  beforeAll(async () => {
    owner = await h.createKey();
    client = await signIn(h, owner.email);
  });

  it('shows the key with its state and settings', async () => {
    const keys = await client.get('/owner/keys');
    expect(keys.status).toBe(200);
    expect(keys.text).toContain(owner.key);
    expect(keys.text).toContain('badge-active');
    expect(keys.headers['content-security-policy']).toContain("default-src 'none'");
    expect(keys.headers['cache-control']).toBe('no-store');
  });

  it('watches a submission go from queued to sent, fields in order, then downloads its file byte-identical', async () => {
    await h.workers[0]!.worker.pause();
    firstId = await submitWithFile(owner.key, 'first message');
    const queued = await page();
    expect(statusOn(queued.text, firstId)).toBe('queued');
    // The list's line: the time (exact, in UTC, on hover), the sender, the subject linking to the message's page.
    const row = rowOf(queued.text, firstId);
    expect(row).toMatch(/<time datetime="\d{4}-\d\d-\d\dT[^"]+Z" title="\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC" data-relative>(just now|\d+ \w+ ago)<\/time>/);
    expect(row).toContain('visitor@example.org');
    expect(row).toContain(`<a href="/owner/submissions/${firstId}">About first message</a>`);
    expect(row).not.toContain('<dt>message</dt>');
    const card = cardOf((await message(firstId)).text, firstId);
    const order = ['<dt>email</dt>', '<dt>subject</dt>', '<dt>message</dt>', '<dt>zeta</dt>', '<dt>alpha</dt>'].map((f) => card.indexOf(f));
    expect(order.every((at) => at >= 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    expect(card).toContain('not yet');

    await h.workers[0]!.worker.resume();
    const sent = await eventually(async () => {
      const shown = await message(firstId);
      return statusOn(shown.text, firstId) === 'sent' ? shown.text : undefined;
    });
    expect(cardOf(sent, firstId)).toMatch(/data-field="sent"><time datetime="\d{4}-[^"]+">\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC</);
    expect(cardOf(sent, firstId)).toMatch(/data-field="attempts">1</);

    const href = /href="(\/owner\/submissions\/[^"]+\/files\/[^"]+)"/.exec(cardOf(sent, firstId))![1]!;
    const file = await fetch(`${h.url}${href}`, { headers: { cookie: `owner_session=${client.cookie}` } });
    expect(file.status).toBe(200);
    expect(Buffer.from(await file.arrayBuffer()).equals(FILE)).toBe(true);
    expect(file.headers.get('content-type')).toBe('image/png');
    expect(file.headers.get('content-disposition')).toBe('attachment; filename="photo.png"');
    expect(file.headers.get('x-content-type-options')).toBe('nosniff');
    expect(file.headers.get('content-security-policy')).toBe("default-src 'none'; sandbox");
  });

  it('shows a permanently failed email with the SMTP reply, and re-sends it once the server accepts mail again', async () => {
    h.sink.behave(() => ({ code: 550, message: 'mailbox unavailable: owner-journey' }));
    failedId = await submit(owner.key, 'this one fails');
    const failed = await eventually(async () => {
      const shown = await message(failedId);
      return statusOn(shown.text, failedId) === 'failed' ? shown.text : undefined;
    });
    expect(cardOf(failed, failedId)).toContain('mailbox unavailable: owner-journey');
    expect(cardOf(failed, failedId)).toContain(`action="/owner/submissions/${failedId}/resend"`);

    h.sink.behave(undefined);
    const resent = await client.post(`/owner/submissions/${failedId}/resend`);
    expect(resent.status).toBe(303);
    expect(resent.headers.location).toBe(`/owner/submissions/${failedId}?notice=resent`);
    const sent = await eventually(async () => {
      const shown = await message(failedId);
      return statusOn(shown.text, failedId) === 'sent' ? cardOf(shown.text, failedId) : undefined;
    });
    // The earlier refusal stays in the history, below the accepted attempt; the button is gone.
    expect(sent).toContain('data-field="history-count">2 attempts<');
    const history = [...sent.matchAll(/<li><time datetime="[^"]+">[^<]+<\/time> · attempt (\d+) · (\w+) · <code>([^<]*)<\/code>/g)].map((match) =>
      match.slice(1),
    );
    expect(history).toEqual([
      ['2', 'sent', expect.stringMatching(/^250 /)],
      ['1', 'failed', expect.stringContaining('550 mailbox unavailable: owner-journey')],
    ]);
    expect(sent).toContain('data-field="hint">accepted by the mail server<');
    expect(sent).toMatch(/action="\/owner\/submissions\/[^"]+\/resend" data-show="resend" hidden>/);
    expect(h.sink.messages.some((mail) => mail.parsed.text?.includes('this one fails'))).toBe(true);
    // Re-sending what did not fail is refused.
    expect((await client.post(`/owner/submissions/${failedId}/resend`)).status).toBe(409);
  });

  it("shows the owner what each attempt came to, without the worker's host and process or the relay's host name", async () => {
    // The attempts of the email that failed, then went out: made by this test's worker.
    const worker = (await h.sql<{ worker: string }>('select worker from delivery_attempts where submission_id = $1 limit 1', [failedId]))[0]!.worker;
    expect(worker).toMatch(/:\d+$/);
    // A relay whose name did not resolve, as Node words it.
    const dnsError = 'getaddrinfo ENOTFOUND relay.internal.example';
    await h.sql("insert into delivery_attempts (submission_id, attempt, outcome, response, worker) values ($1, 2, 'retrying', $2, $3)", [
      failedId,
      dnsError,
      worker,
    ]);
    await h.sql('update submissions set last_error = $2 where id = $1', [failedId, 'connect ECONNREFUSED 10.20.30.40:587']);

    const shown = cardOf((await message(failedId)).text, failedId);
    expect(shown).toContain('data-field="history-count">3 attempts<');
    expect(shown).toContain('· attempt 3 · retrying · <code>getaddrinfo ENOTFOUND (the mail relay)</code></li>');
    expect(shown).toContain('<code>connect ECONNREFUSED (the mail relay)</code>');
    expect(shown).toMatch(/· attempt 2 · sent · <code>250 [^<]*<\/code><\/li>/);
    const api = (await client.api('GET', `/submissions/${failedId}`)).text;
    for (const text of [shown, api]) {
      expect(text).not.toContain(worker);
      expect(text).not.toContain('relay.internal.example');
      expect(text).not.toContain('10.20.30.40');
    }
    expect(JSON.parse(api)).toMatchObject({
      last_error: 'connect ECONNREFUSED (the mail relay)',
      delivery_attempts: [
        { attempt: 2, outcome: 'retrying', response: 'getaddrinfo ENOTFOUND (the mail relay)' },
        { attempt: 1, outcome: 'sent' },
        { attempt: 1, outcome: 'failed' },
      ],
    });
    expect(JSON.parse(api).delivery_attempts[0]).not.toHaveProperty('worker');
  });

  it('re-sends an old failed email as a fresh delivery: a temporary refusal on the way is retried, not final', async () => {
    h.sink.behave(() => ({ code: 550, message: 'mailbox unavailable: old-failure' }));
    const oldId = await submit(owner.key, 'failed a week ago');
    await eventually(async () => (statusOn((await page()).text, oldId) === 'failed' ? true : undefined));
    // Older than the retry horizon (EMAIL_RETRY_HORIZON_MS, 5 days).
    await updateSubmission(h, oldId, { createdAt: ago({ days: 7 }) });
    let refusals = 0;
    h.sink.behave(() => (refusals++ < 1 ? { code: 451, message: 'greylisted, come back later' } : undefined));
    try {
      expect((await client.post(`/owner/submissions/${oldId}/resend`)).status).toBe(303);
      const sent = await eventually(async () => {
        const shown = await message(oldId);
        return statusOn(shown.text, oldId) === 'sent' ? shown.text : undefined;
      });
      // The first send's refusal, then the greylisted try and the accepted one: every attempt, as the history lists them.
      expect(cardOf(sent, oldId)).toMatch(/data-field="attempts">3</);
      expect(h.sink.messages.some((mail) => mail.parsed.text?.includes('failed a week ago'))).toBe(true);
    } finally {
      h.sink.behave(undefined);
    }
  });

  it("exports the key's submissions as CSV", async () => {
    const csv = await client.get(`/owner/keys/${owner.id}/submissions.csv`);
    expect(csv.status).toBe(200);
    expect(csv.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(csv.headers['content-disposition']).toBe('attachment; filename="submissions.csv"');
    expect(csv.text).toContain(firstId);
    expect(csv.text).toContain(failedId);
  });

  it('deletes a submission, and its files are gone from storage', async () => {
    const [file] = await h.sql('select storage_key from attachments where submission_id = $1', [firstId]);
    expect(await listObjectKeys(h.storage)).toContain(file!.storage_key);
    const deleted = await client.post(`/owner/submissions/${firstId}/delete`);
    expect(deleted.status).toBe(303);
    expect(await listObjectKeys(h.storage)).not.toContain(file!.storage_key);
    expect(await submissionExists(h, firstId)).toBe(false);
    expect(rowOf((await page()).text, firstId)).toBe('');
    expect((await message(firstId)).status).toBe(404);
  });

  it("shapes the key's email and previews it escaped; an unknown placeholder is refused", async () => {
    const saved = await client.post(`/owner/keys/${owner.id}`, {
      action: 'save',
      domains: '',
      captcha: '',
      email_subject: '<b>{name}</b>: {subject}',
      email_field_order: 'company',
      email_hidden_fields: 'name',
      email_files: 'link',
    });
    expect(saved.status).toBe(303);
    expect(saved.headers.location).toBe(`/owner/keys/${owner.id}/settings?notice=saved`);
    const text = (await client.get(`/owner/keys/${owner.id}/settings`)).text;
    expect(text).toContain(
      '<strong>Subject:</strong> <span data-preview-field="email-subject">&lt;b&gt;Ada Lovelace&lt;/b&gt;: Question about an order</span>',
    );
    expect(text).toContain('company: Example Ltd');
    expect(text).not.toContain('name: Ada Lovelace');
    expect(text).toContain('<option value="link" selected>Always as links</option>');
    const bad = await client.post(`/owner/keys/${owner.id}`, { action: 'save', domains: '', captcha: '', email_subject: '{phone}' });
    expect(bad.status).toBe(400);
    expect(bad.text).toContain('Unknown placeholder: {phone}');
    await client.post(`/owner/keys/${owner.id}`, {
      action: 'save',
      domains: '',
      captcha: '',
      email_subject: '',
      email_field_order: '',
      email_hidden_fields: '',
      email_files: 'attach',
    });
  });

  it("changes the key's domains and captcha, disables, enables and deletes it (with a tick)", async () => {
    const saved = await client.post(`/owner/keys/${owner.id}`, { action: 'save', domains: 'Example.com\nshop.example.org', captcha: 'turnstile' });
    expect(saved.status).toBe(303);
    expect(await h.sql('select use_domain, domains, captcha from verification_keys where id = $1', [owner.id])).toEqual([
      { use_domain: true, domains: ['example.com', 'shop.example.org'], captcha: 'turnstile' },
    ]);
    // ALTCHA, which this service serves itself, is one of the choices; the page shows it chosen.
    expect((await client.post(`/owner/keys/${owner.id}`, { action: 'save', domains: 'example.com', captcha: 'altcha' })).status).toBe(303);
    expect(await h.sql('select captcha from verification_keys where id = $1', [owner.id])).toEqual([{ captcha: 'altcha' }]);
    expect((await client.get(`/owner/keys/${owner.id}/settings`)).text).toContain('<option value="altcha" selected>ALTCHA (served by this service)</option>');
    const bad = await client.post(`/owner/keys/${owner.id}`, { action: 'save', domains: 'http://x/y', captcha: '' });
    expect(bad.status).toBe(400);
    expect(bad.text).toContain('Not a host name');

    const off = await client.post(`/owner/keys/${owner.id}`, { action: 'disable' });
    expect(off.status).toBe(303);
    expect(await submit(owner.key, 'x').catch(() => 'refused')).toBe('refused');
    expect((await client.post(`/owner/keys/${owner.id}`, { action: 'enable', domains: '', captcha: '' })).status).toBe(303);
    expect(await keyStatusOf(h, owner.id)).toBe('active');

    const unticked = await client.post(`/owner/keys/${owner.id}`, { action: 'delete' });
    expect(unticked.status).toBe(400);
    expect(unticked.text).toContain('To delete the key, tick');
    expect(await keyStatusOf(h, owner.id)).toBe('active');
    expect((await client.post(`/owner/keys/${owner.id}`, { action: 'delete', confirm_delete: 'yes' })).status).toBe(303);
    expect(await keyStatusOf(h, owner.id)).toBe('deleted');
    // Its messages are still there for the owner.
    expect((await page()).text).toContain(`id="s-${failedId}"`);
  });

  it('signs out: the session ends on the server and the old cookie is refused', async () => {
    const out = await client.post('/owner/sign-out');
    expect(out.status).toBe(303);
    expect([out.headers['set-cookie']].flat().join('')).toContain('owner_session=; Path=/owner; Max-Age=0');
    expect(await h.sql('select id from owner_sessions where email = $1', [owner.email])).toEqual([]);
    const page = await client.get('/owner/keys');
    expect(page.status).toBe(303);
    expect(page.headers.location).toBe('/owner');
    expect((await client.api('GET', '/keys')).status).toBe(401);
    expect((await client.get(`/owner/keys/${owner.id}/submissions.csv`)).status).toBe(303);
  });
});

describe('messages held for recipient consent', () => {
  it('shows how many wait, and the signed-in owner confirms the address and receives them', async () => {
    const owner = await h.createKey();
    // The address's allowance for unconfirmed mail is spent this hour: the next message is held.
    await buildAllowance(h, { mailbox: owner.mailbox, used: 1_000_000 });
    const id = await submit(owner.key, 'held until confirmed');
    expect(await emailStatusOf(h, id)).toBe('held');
    const client = await signIn(h, owner.email);
    const keys = await client.get('/owner/keys');
    expect(keys.text).toContain('<strong>1</strong> waiting now');
    expect((await client.api('GET', '/keys')).json).toMatchObject({ mailbox_confirmed: false, held: 1 });

    const confirmed = await client.post('/owner/confirm');
    expect(confirmed.status).toBe(303);
    expect(confirmed.headers.location).toBe('/owner/keys?notice=confirmed');
    await eventually(async () => ((await emailStatusOf(h, id)) === 'sent' ? true : undefined));
    expect((await client.get('/owner/keys')).text).not.toContain('Confirm and receive them all');
    expect((await client.api('GET', '/keys')).json).toMatchObject({ mailbox_confirmed: true, held: 0 });
  });

  it('lets the owner of deleted keys only still sign in to see their messages', async () => {
    const owner = await h.createKey({ status: 'deleted' });
    const client = await signIn(h, owner.email);
    expect((await client.get('/owner/keys')).text).toContain('badge-deleted');
  });
});

describe('the JSON API', () => {
  it('does the same operations with the same session, writes need the CSRF token', async () => {
    const owner = await h.createKey();
    const used = await postJson(`${h.url}/owner/api/session`, {
      token: (await askForLink(h, owner.email)).searchParams.get('token'),
    });
    expect(used.status).toBe(200);
    const cookie = /owner_session=([^;]*)/.exec(used.headers.get('set-cookie') ?? '')![1]!;
    const client = ownerClient(h, cookie, used.json.csrf_token);
    expect(used.json).toMatchObject({ email: owner.email });
    expect((await client.api('GET', '/session')).json).toEqual(used.json);

    const keys = await client.api('GET', '/keys');
    expect(keys.json).toMatchObject({ email: owner.email, keys: [{ id: owner.id, key: owner.key, status: 'active' }] });

    const patched = await client.api('PATCH', `/keys/${owner.id}`, { domains: ['example.com'], captcha: 'hcaptcha' });
    expect(patched.status).toBe(200);
    expect(patched.json).toMatchObject({ id: owner.id, use_domain: true, domains: ['example.com'], captcha: 'hcaptcha' });
    const altcha = await client.api('PATCH', `/keys/${owner.id}`, { captcha: 'altcha' });
    expect(altcha.status).toBe(200);
    expect(altcha.json).toMatchObject({ id: owner.id, captcha: 'altcha' });
    expect((await client.api('PATCH', `/keys/${owner.id}`, { domains: [], captcha: null })).status).toBe(200);

    const id = await submitWithFile(owner.key, 'api message');
    const listed = await eventually(async () => {
      const list = await client.api('GET', `/keys/${owner.id}/submissions?limit=10`);
      return list.json.submissions[0]?.email_status === 'sent' ? list.json : undefined;
    });
    expect(listed.submissions[0]).toMatchObject({
      submission_id: id,
      key_id: owner.id,
      email_attempts: 1,
      last_error: null,
      custom_fields: [
        { name: 'zeta', value: 'first custom' },
        { name: 'alpha', value: 'second custom' },
      ],
      attachments: [{ filename: 'photo.png', content_type: 'image/png', size: FILE.length }],
    });
    const one = await client.api('GET', `/submissions/${id}`);
    expect(one.json.submission_id).toBe(id);
    const file = await fetch(`${h.url}/owner/api/submissions/${id}/files/${one.json.attachments[0].id}`, {
      headers: { cookie: `owner_session=${cookie}` },
    });
    expect(Buffer.from(await file.arrayBuffer()).equals(FILE)).toBe(true);
    expect((await client.api('POST', `/submissions/${id}/resend`)).status).toBe(409);

    // Without the token, or with another, a write is refused and changes nothing.
    expect((await client.api('DELETE', `/submissions/${id}`, undefined, { 'x-csrf-token': '' })).status).toBe(403);
    expect((await client.api('DELETE', `/submissions/${id}`, undefined, { 'x-csrf-token': 'x'.repeat(43) })).status).toBe(403);
    expect((await client.api('GET', `/submissions/${id}`)).status).toBe(200);

    expect((await client.api('DELETE', `/submissions/${id}`)).status).toBe(204);
    expect((await client.api('GET', `/submissions/${id}`)).status).toBe(404);
    expect((await client.api('DELETE', '/session')).status).toBe(204);
    expect((await client.api('GET', '/keys')).status).toBe(401);
  });
});

describe('isolation between owners', () => {
  it("owner A gets the same 404 for owner B's keys, submissions, files and export as for ids that do not exist", async () => {
    const a = await h.createKey();
    const b = await h.createKey();
    const bSubmission = await submitWithFile(b.key, 'for B only');
    await eventually(async () => ((await emailStatusOf(h, bSubmission)) === 'sent' ? true : undefined));
    const [bFile] = await h.sql('select id from attachments where submission_id = $1', [bSubmission]);
    const clientA = await signIn(h, a.email);
    const none = randomUUID();

    const ids = { key: b.id, submission: bSubmission, file: bFile!.id as string };
    const missing = { key: none, submission: none, file: none };
    const probes = (target: typeof ids) => [
      () => clientA.get(`/owner/keys/${target.key}/submissions`),
      () => clientA.get(`/owner/keys/${target.key}/submissions.csv`),
      () => clientA.post(`/owner/keys/${target.key}`, { action: 'disable' }),
      () => clientA.get(`/owner/submissions/${target.submission}/files/${target.file}`),
      () => clientA.post(`/owner/submissions/${target.submission}/resend`),
      () => clientA.post(`/owner/submissions/${target.submission}/delete`),
      () => clientA.api('GET', `/keys/${target.key}/submissions`),
      () => clientA.api('GET', `/keys/${target.key}/submissions.csv`),
      () => clientA.api('PATCH', `/keys/${target.key}`, { status: 'disabled' }),
      () => clientA.api('GET', `/submissions/${target.submission}`),
      () => clientA.api('GET', `/submissions/${target.submission}/files/${target.file}`),
      () => clientA.api('POST', `/submissions/${target.submission}/resend`),
      () => clientA.api('DELETE', `/submissions/${target.submission}`),
    ];
    const theirs = probes(ids);
    const nowhere = probes(missing);
    for (let i = 0; i < theirs.length; i++) {
      const [got, absent] = [await theirs[i]!(), await nowhere[i]!()];
      expect(got.status, `probe ${i}`).toBe(404);
      expect(got.text.replaceAll(b.id, 'ID').replaceAll(bSubmission, 'ID')).toBe(absent.text.replaceAll(none, 'ID'));
    }
    // A's own file under B's submission id (and B's file under A's) is not found either.
    const aSubmission = await submit(a.key, 'for A');
    expect((await clientA.get(`/owner/submissions/${aSubmission}/files/${bFile!.id}`)).status).toBe(404);
    // B's key and submission are untouched, and A's list shows only A's key.
    expect(await keyStatusOf(h, b.id)).toBe('active');
    expect(await submissionExists(h, bSubmission)).toBe(true);
    const keys = await clientA.api('GET', '/keys');
    expect(keys.json.keys.map((key: { id: string }) => key.id)).toEqual([a.id]);
    expect((await clientA.get('/owner/keys')).text).not.toContain(b.key);
  });
});

describe('cross-site requests', () => {
  it('refuses a cross-site POST even with the cookie and the token, and a same-site one without the token', async () => {
    const owner = await h.createKey();
    const client = await signIn(h, owner.email);
    const attempts = [
      await client.post(`/owner/keys/${owner.id}`, { action: 'delete' }, { origin: 'http://evil.example' }),
      await client.post(`/owner/keys/${owner.id}`, { action: 'delete' }, { origin: 'null' }),
      await client.post(`/owner/keys/${owner.id}`, { action: 'delete' }, { 'sec-fetch-site': 'cross-site' }),
      await client.post(`/owner/keys/${owner.id}`, { action: 'delete', csrf_token: '' }),
      await client.post('/owner/sign-out', {}, { origin: 'http://evil.example' }),
      await client.api('PATCH', `/keys/${owner.id}`, { status: 'deleted' }, { origin: 'http://evil.example' }),
      await postForm(h, '/owner/sign-in', { email: owner.email }, { origin: 'http://evil.example' }),
      await postForm(h, '/owner/link', { token: 'x' }, { 'sec-fetch-site': 'cross-site' }),
    ];
    for (const response of attempts) expect(response.status).toBe(403);
    expect(await keyStatusOf(h, owner.id)).toBe('active');
    expect((await client.get('/owner/keys')).status).toBe(200);
    expect(csrfIn((await client.get('/owner/keys')).text)).toBe(client.csrf);
  });
});

describe('refusals in the pages', () => {
  it("are pages for a browser's form and JSON for a JSON request", async () => {
    const refused = await postForm(h, '/owner/sign-in', { email: 'a@example.org' }, { 'sec-fetch-site': 'cross-site' });
    expect(refused.status).toBe(403);
    expect(refused.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(refused.text).toContain('Cross-site request refused.');
    const json = await postJson(`${h.url}/owner/sign-in`, { email: 'a@example.org' }, { 'sec-fetch-site': 'cross-site' });
    expect(json.status).toBe(403);
    expect(json.json).toEqual({ success: false, message: 'Cross-site request refused.', errors: { __all__: ['Cross-site request refused.'] } });
  });
});
