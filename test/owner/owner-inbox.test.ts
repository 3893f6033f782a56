// The owner console as an inbox: named keys (pages, APIs, the email's subject), the list of
// messages with one line each, its full-text search and filters (pages, JSON API, CSV), and the
// message page.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ago, buildSubmissions, updateSubmission } from '../support/factories.ts';
import { eventually, startHarness, type Harness } from '../support/harness.ts';
import { emailStatusOf } from '../support/rows.ts';
import { adminClient, submitJson } from '../support/client.ts';
import { signIn, type OwnerClient } from '../support/owner.ts';

const TOKEN = 'test-admin-token-0123456789';
let h: Harness;
beforeAll(async () => {
  h = await startHarness({ env: { ADMIN_TOKEN: TOKEN } });
});
afterAll(() => h?.stop());
const admin = adminClient(() => h, TOKEN);

const submit = async (fields: Record<string, unknown>) => {
  const response = await submitJson(h, fields);
  expect(response.status).toBe(200);
  return response.json.submission_id as string;
};
const settled = (id: string) =>
  eventually(async () => {
    const status = await emailStatusOf(h, id);
    return status === 'sent' || status === 'failed' ? status : undefined;
  });
/** The ids of the lines of a list page, in order. */
const listed = (html: string) => [...html.matchAll(/<tr id="s-([0-9a-f-]{36})"/g)].map((match) => match[1]);
const titleOf = (html: string) => /<title>([^<]*)<\/title>/.exec(html)?.[1];

describe('named keys', () => {
  let owner: Awaited<ReturnType<Harness['createKey']>>;
  let client: OwnerClient;
  const LABEL = 'Contact page, shop.example';
  beforeAll(async () => {
    owner = await h.createKey();
    client = await signIn(h, owner.email);
  });

  it('names a key on the keys page; the name heads its pages, the key moves to a line with a copy button', async () => {
    const saved = await client.post(`/owner/keys/${owner.id}`, { action: 'save', label: `  ${LABEL} `, subject_prefix: 'yes', domains: '', captcha: '' });
    expect(saved.status).toBe(303);
    const keys = (await client.get('/owner/keys')).text;
    expect(keys).toContain(`<h2 id="key-${owner.id}">${LABEL}</h2>`);
    expect(keys).toContain(
      `<p class="key-detail">Key <code id="key-value-${owner.id}">${owner.key}</code> <button type="button" class="secondary small" data-copy="key-value-${owner.id}" hidden>Copy key</button></p>`,
    );
    expect((await client.get(`/owner/keys/${owner.id}/settings`)).text).toMatch(/name="subject_prefix" value="yes" checked/);

    const list = (await client.get(`/owner/keys/${owner.id}/submissions`)).text;
    expect(titleOf(list)).toBe(`Messages · ${LABEL}`);
    expect(list).toContain(`<h1>Messages sent with ${LABEL}</h1>`);
    expect(titleOf((await client.get(`/owner/keys/${owner.id}/spam`)).text)).toBe(`Spam · ${LABEL}`);
  });

  it("puts the name before the subject of the key's emails when the owner asks, and not once turned off", async () => {
    const first = await submit({ access_key: owner.key, email: 'v@example.org', subject: 'A question', message: 'labelled' });
    await settled(first);
    expect(h.sink.messages.find((mail) => mail.parsed.text?.includes('labelled'))?.parsed.subject).toBe(`[${LABEL}] A question`);
    expect(titleOf((await client.get(`/owner/submissions/${first}`)).text)).toBe(`A question · ${LABEL}`);

    expect((await client.api('PATCH', `/keys/${owner.id}`, { subject_prefix: false })).json).toMatchObject({ label: LABEL, subject_prefix: false });
    const second = await submit({ access_key: owner.key, email: 'v@example.org', subject: 'Another one', message: 'plain subject' });
    await settled(second);
    expect(h.sink.messages.find((mail) => mail.parsed.text?.includes('plain subject'))?.parsed.subject).toBe('Another one');
  });

  it('shows the name in the owner and admin APIs, refuses a second line or a long name, and removes it with null', async () => {
    expect((await client.api('GET', '/keys')).json.keys).toEqual([expect.objectContaining({ id: owner.id, label: LABEL, subject_prefix: false })]);
    const twoLines = await client.api('PATCH', `/keys/${owner.id}`, { label: 'Shop\r\nBcc: someone@example.net' });
    expect(twoLines.status).toBe(400);
    expect(twoLines.json).toMatchObject({ success: false, errors: { label: ['A label is one line: no line breaks, control or text-direction characters.'] } });
    // The C1 controls too (U+0080–U+009F): U+0085 is a line break to some readers, U+009B a terminal's
    // escape; and the bidi controls, which make a visitor's mail reader show the name reordered.
    for (const label of ['Shop\u0085Bcc: someone@example.net', 'Shop \u009b31m', 'Shop\u0080', 'Shop \u202egnp.exe', 'Shop \u2067x\u2069', 'Shop\u200f']) {
      const refused = await client.api('PATCH', `/keys/${owner.id}`, { label });
      expect(refused.status).toBe(400);
      expect(refused.json).toMatchObject({ success: false, errors: { label: ['A label is one line: no line breaks, control or text-direction characters.'] } });
      const byAdmin = await admin('PATCH', `/admin/keys/${owner.key}`, { label });
      expect(byAdmin.status).toBe(400);
      expect(byAdmin.json.errors.label).toEqual(['A label is one line: no line breaks, control or text-direction characters.']);
    }
    expect((await client.api('GET', '/keys')).json.keys[0].label).toBe(LABEL);
    const long = await client.api('PATCH', `/keys/${owner.id}`, { label: 'x'.repeat(101) });
    expect(long.status).toBe(400);
    expect(long.json.errors.label).toEqual(['A label has at most 100 characters.']);
    const page = await client.post(`/owner/keys/${owner.id}`, { action: 'save', label: 'x'.repeat(101), domains: '', captcha: '' });
    expect(page.status).toBe(400);
    expect(page.text).toContain('A label has at most 100 characters.');
    expect((await client.api('PATCH', `/keys/${owner.id}`, { label: 'é'.repeat(100) })).json.label).toBe('é'.repeat(100));

    const listedByAdmin = await admin('GET', `/admin/keys?email=${encodeURIComponent(owner.email)}`);
    expect(listedByAdmin.json.keys).toEqual([expect.objectContaining({ key: owner.key, label: 'é'.repeat(100), subject_prefix: false })]);
    const cleared = await admin('PATCH', `/admin/keys/${owner.key}`, { label: null });
    expect(cleared.status).toBe(200);
    expect(cleared.json.label).toBeNull();
    // Without a name, the key's value heads its pages again.
    expect((await client.get(`/owner/keys/${owner.id}/submissions`)).text).toContain(`<h1>Messages sent with <code>${owner.key}</code></h1>`);
  });
});

describe('the list, its search and its filters', () => {
  let owner: Awaited<ReturnType<Harness['createKey']>>;
  let client: OwnerClient;
  const ids: Record<string, string> = {};
  const list = async (query: string) => listed((await client.get(`/owner/keys/${owner.id}/submissions${query}`)).text);

  beforeAll(async () => {
    owner = await h.createKey();
    client = await signIn(h, owner.email);
    ids.ana = await submit({ access_key: owner.key, email: 'ana.lopez@example.org', subject: 'Quote for 40 units', message: 'Could you send a price?' });
    ids.bob = await submit({ access_key: owner.key, email: 'bob@example.net', message: 'Hello there', company: 'Zephyrine Ltd' });
    ids.carl = await submit({
      access_key: owner.key,
      email: 'carl@example.com',
      message: 'Tuesday delivery: are the pallets   ready? We need them before noon on the dock, please confirm soon.',
    });
    for (const id of [ids.ana, ids.bob, ids.carl]) expect(await settled(id)).toBe('sent');
    h.sink.behave(() => ({ code: 550, message: 'no such mailbox (inbox filters)' }));
    try {
      ids.dora = await submit({ access_key: owner.key, email: 'dora@example.org', subject: 'Refused one', message: 'this one fails' });
      expect(await settled(ids.dora)).toBe('failed');
    } finally {
      h.sink.behave(undefined);
    }
    // Bob wrote ten days ago.
    await updateSubmission(h, ids.bob, { createdAt: ago({ days: 10 }) });
  });

  it('shows one line per message: the subject, or the first words of one without; a status chip; a link to its page', async () => {
    const html = (await client.get(`/owner/keys/${owner.id}/submissions`)).text;
    expect(listed(html)).toEqual([ids.dora, ids.carl, ids.ana, ids.bob]);
    expect(html).toContain(
      `<a href="/owner/submissions/${ids.carl}">Tuesday delivery: are the pallets ready? We need them before noon on the dock, please…</a>`,
    );
    expect(html).toMatch(new RegExp(`id="s-${ids.dora}"[^]*?<span class="badge badge-failed" data-field="status" title="not delivered: [^"]+">failed</span>`));
    expect(html).toContain('Times are in UTC');
    const page = await client.get(`/owner/submissions/${ids.dora}`);
    expect(page.text).toContain('<h1>Refused one</h1>');
    expect(page.text).toContain('no such mailbox (inbox filters)');
    expect(page.text).toContain(`action="/owner/submissions/${ids.dora}/resend"`);
  });

  it("finds messages by the beginning of any word of the address, subject, message or a field's value", async () => {
    expect(await list('?q=ana')).toEqual([ids.ana]);
    expect(await list('?q=LOPEZ')).toEqual([ids.ana]);
    expect(await list('?q=zephyr')).toEqual([ids.bob]);
    expect(await list('?q=pallets+tues')).toEqual([ids.carl]);
    expect(await list('?q=quote')).toEqual([ids.ana]);
    expect(await list('?q=example.org')).toEqual([ids.dora, ids.ana]);
    expect(await list('?q=nowhere')).toEqual([]);
    expect((await client.get(`/owner/keys/${owner.id}/submissions?q=nowhere`)).text).toContain('No messages match these filters.');
    // Punctuation is no syntax: it finds nothing or what its words find, never an error.
    expect(await list(`?q=${encodeURIComponent("ana' & ! :* (")}`)).toEqual([ids.ana]);
  });

  it('filters by status and by received day, and pages through the filtered list', async () => {
    expect(await list('?status=failed')).toEqual([ids.dora]);
    expect(await list('?status=sent&q=example')).toEqual([ids.carl, ids.ana, ids.bob]);
    const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10);
    expect(await list(`?from=${day(-2)}`)).toEqual([ids.dora, ids.carl, ids.ana]);
    expect(await list(`?to=${day(-5)}`)).toEqual([ids.bob]);
    expect(await list(`?from=${day(-11)}&to=${day(-9)}`)).toEqual([ids.bob]);

    const first = await client.api('GET', `/keys/${owner.id}/submissions?status=sent&limit=2`);
    expect(first.json.submissions.map((s: any) => s.submission_id)).toEqual([ids.carl, ids.ana]);
    const second = await client.api('GET', `/keys/${owner.id}/submissions?status=sent&limit=2&cursor=${first.json.next_cursor}`);
    expect(second.json).toMatchObject({ submissions: [{ submission_id: ids.bob }], next_cursor: null });
  });

  it('finds a rare word far down a long list, and pages through a common one', async () => {
    const busy = await h.createKey();
    const busyClient = await signIn(h, busy.email);
    // 1,500 messages, one a minute: the oldest mentions a rare word, every third a common one.
    await buildSubmissions(
      h,
      Array.from({ length: 1500 }, (_, i) => {
        const n = i + 1;
        const message = n === 1500 ? 'Greetings from Zanzibar' : n % 3 === 0 ? `About the invoice ${n}` : `Hello ${n}`;
        return { key: busy, email: `visitor${n}@example.test`, message, subject: `Message ${n}`, status: 'sent', attempts: 1, createdAt: ago({ minutes: n }) };
      }),
    );
    const search = (query: string) => busyClient.api('GET', `/keys/${busy.id}/submissions?${query}`);
    const rare = await search('q=zanzib');
    expect(rare.json.submissions.map((s: any) => s.message)).toEqual(['Greetings from Zanzibar']);
    expect(rare.json.next_cursor).toBeNull();
    const common = await search('q=invoice&limit=100');
    expect(common.json.submissions).toHaveLength(100);
    expect(common.json.submissions[0].message).toBe('About the invoice 3');
    let seen = (common.json.submissions as unknown[]).length;
    let cursor = common.json.next_cursor;
    while (cursor) {
      const next = await search(`q=invoice&limit=100&cursor=${cursor}`);
      seen += (next.json.submissions as unknown[]).length;
      cursor = next.json.next_cursor;
    }
    expect(seen).toBe(499); // every third of 1..1499
    expect((await search('q=invoice+zanzibar')).json.submissions).toEqual([]);
  });

  it('exports what the filters show as CSV, and links the download with them', async () => {
    const csv = (await client.get(`/owner/keys/${owner.id}/submissions.csv?q=zephyr`)).text;
    expect(csv).toContain(ids.bob);
    expect(csv.trim().split('\r\n')).toHaveLength(2);
    const apiCsv = (await client.api('GET', `/keys/${owner.id}/submissions.csv?status=failed`)).text;
    expect(apiCsv).toContain(ids.dora);
    expect(apiCsv).not.toContain(ids.ana);
    const html = (await client.get(`/owner/keys/${owner.id}/submissions?q=zephyr&status=sent`)).text;
    expect(html).toContain(`href="/owner/keys/${owner.id}/submissions.csv?q=zephyr&amp;status=sent" download>Download these as CSV</a>`);
    expect(html).toContain('value="zephyr"');
    expect(html).toMatch(/<option value="sent" selected>/);
  });

  it('refuses a malformed date or a reversed range with a clear error, on the page and in the API', async () => {
    const page = await client.get(`/owner/keys/${owner.id}/submissions?from=2026-02-30`);
    expect(page.status).toBe(400);
    expect(page.text).toContain('from: Give a date as YYYY-MM-DD.');
    const api = await client.api('GET', `/keys/${owner.id}/submissions?from=2026-11-20&to=2026-11-01`);
    expect(api.status).toBe(400);
    expect(api.json).toMatchObject({ success: false, errors: { to: ['The first day comes after the last.'] } });
    const status = await client.api('GET', `/keys/${owner.id}/submissions?status=lost`);
    expect(status.status).toBe(400);
    expect(status.json.errors.status[0]).toMatch(/^Must be one of queued, /);
  });

  it('shows a message page only to its owner; a spam mark there comes back to it', async () => {
    const other = await h.createKey();
    const stranger = await signIn(h, other.email);
    expect((await stranger.get(`/owner/submissions/${ids.ana}`)).status).toBe(404);
    expect((await client.get('/owner/submissions/not-an-id')).status).toBe(404);
    const marked = await client.post(`/owner/submissions/${ids.ana}/spam-mark`, { mark: 'spam', view: 'submission' });
    expect(marked.status).toBe(303);
    expect(marked.headers.location).toMatch(new RegExp(`^/owner/submissions/${ids.ana}\\?notice=spam-(un)?taught$`));
    expect((await client.get(marked.headers.location!)).text).toContain('you marked it spam');
  });
});

describe('the overview', () => {
  it("charts a key's messages per day by outcome, with totals and the last message's time, and all keys together", async () => {
    const first = await h.createKey();
    const second = await h.createKey({ email: first.email });
    const client = await signIn(h, first.email);
    expect((await client.api('PATCH', `/keys/${first.id}`, { label: 'Quote form' })).status).toBe(200);
    const sent = [];
    for (const message of ['one', 'two', 'three days ago', 'forty days ago'])
      sent.push(await submit({ access_key: first.key, email: 'v@example.org', message }));
    const other = await submit({ access_key: second.key, email: 'w@example.org', message: 'second key' });
    for (const id of [...sent, other]) expect(await settled(id)).toBe('sent');
    h.sink.behave(() => ({ code: 550, message: 'no such mailbox (overview)' }));
    let failed: string;
    try {
      failed = await submit({ access_key: first.key, email: 'v@example.org', message: 'refused' });
      expect(await settled(failed)).toBe('failed');
    } finally {
      h.sink.behave(undefined);
    }
    await updateSubmission(h, sent[2]!, { createdAt: ago({ days: 3 }) });
    await updateSubmission(h, sent[3]!, { createdAt: ago({ days: 40 }) });
    const day = (offset: number) => new Date(Date.now() - offset * 86_400_000).toISOString().slice(0, 10);

    const page = await client.get(`/owner/keys/${first.id}/overview`);
    expect(page.status).toBe(200);
    expect(titleOf(page.text)).toBe('Overview · Quote form');
    const total = (name: string) => new RegExp(`data-total="${name}">([^<]*)<`).exec(page.text)?.[1];
    expect([total('all'), total('delivered'), total('spam'), total('failed'), total('other'), total('stored')]).toEqual(['4', '3', '0', '1', '0', '5']);
    expect(page.text).toMatch(/data-total="last"><time datetime="[^"]+Z" title="\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC" data-relative>/);
    // Thirty bars, each saying its day's figures; drawn in the page, nothing fetched from elsewhere.
    expect(page.text.match(/<g class="bar">/g)).toHaveLength(30);
    expect(page.text).toContain(`<title>${day(0)}: 3 messages (2 delivered, 1 bounced or failed)</title>`);
    expect(page.text).toContain(`<title>${day(3)}: 1 message (1 delivered)</title>`);
    expect(page.text).toContain(`<title>${day(29)}: no messages</title>`);
    expect(page.text).not.toContain(day(40));
    expect(page.text).toMatch(/<svg viewBox="0 0 \d+ \d+" role="img" aria-labelledby="chart-title"/);
    expect(page.text).not.toMatch(/(src|href)="https?:/);
    expect(page.text).toMatch(new RegExp(`<tr><th scope="row">${day(0)}</th><td>2</td><td>0</td><td>1</td><td>0</td></tr>`));

    const all = await client.get('/owner/overview');
    expect(all.status).toBe(200);
    expect(/data-total="all">(\d+)</.exec(all.text)?.[1]).toBe('5');
    const row = (id: string) => {
      const start = all.text.indexOf(`<tr id="k-${id}">`);
      return start < 0 ? '' : all.text.slice(start, all.text.indexOf('</tr>', start));
    };
    expect(row(first.id)).toContain(`<a href="/owner/keys/${first.id}/overview">Quote form</a>`);
    expect(row(first.id)).toMatch(/<td>4<\/td><td>1<\/td>/);
    expect(row(second.id)).toMatch(/<td>1<\/td><td>0<\/td>/);

    const stranger = await signIn(h, (await h.createKey()).email);
    expect((await stranger.get(`/owner/keys/${first.id}/overview`)).status).toBe(404);
    expect(/data-total="all">(\d+)</.exec((await stranger.get('/owner/overview')).text)?.[1]).toBe('0');
  });
});
