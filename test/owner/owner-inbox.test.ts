// The owner console as an inbox: named keys (pages, APIs, the email's subject), the list of
// messages with one line each, its full-text search and filters (pages, JSON API, CSV), and the
// message page.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startHarness, type Harness } from '../support/harness.ts';
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
    const [row] = await h.sql('select email_status from submissions where id = $1', [id]);
    return ['sent', 'failed'].includes(row?.email_status) ? row!.email_status : undefined;
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
    expect(keys).toContain(`<p class="key-detail">Key <code id="key-value-${owner.id}">${owner.key}</code> <button type="button" class="secondary small" data-copy="key-value-${owner.id}" hidden>Copy key</button></p>`);
    expect(keys).toMatch(/name="subject_prefix" value="yes" checked/);

    const list = (await client.get(`/owner/keys/${owner.id}/submissions`)).text;
    expect(titleOf(list)).toBe(`Messages · ${LABEL}`);
    expect(list).toContain(`<h1>Messages sent with ${LABEL}</h1>`);
    expect(titleOf((await client.get(`/owner/keys/${owner.id}/spam`)).text)).toBe(`Spam · ${LABEL}`);
  });

  it('puts the name before the subject of the key\'s emails when the owner asks, and not once turned off', async () => {
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
    expect(twoLines.json).toMatchObject({ success: false, errors: { label: ['A label is one line: no line breaks or control characters.'] } });
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
    ids.carl = await submit({ access_key: owner.key, email: 'carl@example.com', message: 'Tuesday delivery: are the pallets   ready? We need them before noon on the dock, please confirm soon.' });
    for (const id of [ids.ana!, ids.bob!, ids.carl!]) expect(await settled(id)).toBe('sent');
    h.sink.behave(() => ({ code: 550, message: 'no such mailbox (inbox filters)' }));
    try {
      ids.dora = await submit({ access_key: owner.key, email: 'dora@example.org', subject: 'Refused one', message: 'this one fails' });
      expect(await settled(ids.dora)).toBe('failed');
    } finally {
      h.sink.behave(undefined);
    }
    // Bob wrote ten days ago.
    await h.sql(`update submissions set created_at = now() - interval '10 days' where id = $1`, [ids.bob]);
  });

  it('shows one line per message: the subject, or the first words of one without; a status chip; a link to its page', async () => {
    const html = (await client.get(`/owner/keys/${owner.id}/submissions`)).text;
    expect(listed(html)).toEqual([ids.dora, ids.carl, ids.ana, ids.bob]);
    expect(html).toContain(`<a href="/owner/submissions/${ids.carl}">Tuesday delivery: are the pallets ready? We need them before noon on the dock, please…</a>`);
    expect(html).toMatch(new RegExp(`id="s-${ids.dora}"[^]*?<span class="badge badge-failed" data-field="status" title="not delivered: [^"]+">failed</span>`));
    expect(html).toContain('Times are in UTC');
    const page = await client.get(`/owner/submissions/${ids.dora}`);
    expect(page.text).toContain('<h1>Refused one</h1>');
    expect(page.text).toContain('no such mailbox (inbox filters)');
    expect(page.text).toContain(`action="/owner/submissions/${ids.dora}/resend"`);
  });

  it('finds messages by the beginning of any word of the address, subject, message or a field\'s value', async () => {
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
    expect((await client.get(marked.headers.location as string)).text).toContain('you marked it spam');
  });
});
