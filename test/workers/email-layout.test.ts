// The owner's layout of the notification email (email_subject, email_field_order,
// email_hidden_fields, email_files), set through the admin API and seen in the SMTP sink.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startHarness, type Harness } from '../support/harness.ts';
import { adminClient, submitJson } from '../support/client.ts';

const TOKEN = 'email-layout-test-admin-token';
let h: Harness;
beforeAll(async () => {
  h = await startHarness({ env: { ADMIN_TOKEN: TOKEN } });
});
afterAll(() => h?.stop());

const admin = adminClient(() => h, TOKEN);
const mailFor = (id: string) => eventually(async () => h.sink.messages.find((mail) => mail.parsed.messageId?.includes(id)), 20_000, `the email of ${id}`);

async function keyWith(layout: Record<string, unknown>) {
  const key = await h.createKey({ email: 'owner@example.test' });
  const changed = await admin('PATCH', `/admin/keys/${key.key}`, { label: 'Shop', ...layout });
  expect(changed.status).toBe(200);
  return key;
}

async function send(key: { key: string }, fields: Record<string, unknown>) {
  const response = await submitJson(h, { access_key: key.key, email: 'visitor@example.org', message: 'Hello', ...fields });
  expect(response.status).toBe(200);
  const id = response.json.submission_id as string;
  return { id, mail: await mailFor(id) };
}

describe('the subject pattern', () => {
  it('fills each placeholder', async () => {
    const key = await keyWith({ email_subject: 'New lead from {name} <{email}> at {key}: {subject} ({field:Budget})' });
    const { mail } = await send(key, { subject: 'Quote', name: 'Ada', Budget: '5k' });
    expect(mail.parsed.subject).toBe('New lead from Ada <visitor@example.org> at Shop: Quote (5k)');
  });

  it('shows a default for an empty placeholder, and leaves no debris of one without a default', async () => {
    const key = await keyWith({ email_subject: 'New lead from {name|a visitor}: {subject} [{field:plan}] <{field:company}>' });
    const { mail } = await send(key, { subject: 'Quote' });
    expect(mail.parsed.subject).toBe('New lead from a visitor: Quote');
    const bare = await keyWith({ email_subject: 'New lead from {name}: {subject} [{field:plan}]' });
    const { mail: bareMail } = await send(bare, { subject: 'Quote', plan: 'Pro' });
    expect(bareMail.parsed.subject).toBe('New lead from Quote [Pro]');
  });

  it('flattens a field to one line: a CRLF in it cannot add a header', async () => {
    const key = await keyWith({ email_subject: 'From {name}: {subject}' });
    const { mail } = await send(key, { subject: 'Hi', name: 'Eve\r\nBcc: victim@example.org' });
    expect(mail.parsed.subject).toBe('From Eve Bcc: victim@example.org: Hi');
    expect(mail.parsed.bcc).toBeUndefined();
    expect(mail.envelope.to).toEqual(['owner@example.test']);
    const headers = mail.raw.toString('latin1').split('\r\n\r\n')[0] ?? '';
    expect(headers).toContain('Subject:');
    expect(headers).not.toMatch(/^Bcc:/im);
  });

  it('refuses unknown placeholders and oversize patterns and lists with a 400 naming them', async () => {
    const key = await h.createKey();
    const unknown = await admin('PATCH', `/admin/keys/${key.key}`, { email_subject: '{subject} {phone} {nope}' });
    expect(unknown.status).toBe(400);
    expect(JSON.stringify(unknown.json)).toContain('{phone}, {nope}');
    const long = await admin('PATCH', `/admin/keys/${key.key}`, { email_subject: 'x'.repeat(201) });
    expect(long.status).toBe(400);
    const many = await admin('PATCH', `/admin/keys/${key.key}`, { email_hidden_fields: Array.from({ length: 51 }, (_, i) => `f${i}`) });
    expect(many.status).toBe(400);
    const longName = await admin('PATCH', `/admin/keys/${key.key}`, { email_field_order: ['n'.repeat(201)] });
    expect(longName.status).toBe(400);
  });
});

describe('field order and hidden fields', () => {
  it('shows the ordered fields first, leaves the hidden ones out of both parts, and keeps them in the record', async () => {
    const key = await keyWith({ email_field_order: ['phone', 'company'], email_hidden_fields: ['tracking'] });
    const { id, mail } = await send(key, { zebra: 'z1', company: 'Acme', tracking: 'utm-secret', phone: '555' });
    const text = mail.parsed.text ?? '';
    const html = String(mail.parsed.html);
    for (const part of [text, html]) {
      expect(part).not.toContain('utm-secret');
      expect(part.indexOf('555')).toBeGreaterThan(-1);
      expect(part.indexOf('555')).toBeLessThan(part.indexOf('Acme'));
      expect(part.indexOf('Acme')).toBeLessThan(part.indexOf('z1'));
    }
    const record = (await admin('GET', `/admin/submissions/${id}`)).json;
    expect(JSON.stringify(record)).toContain('utm-secret');
  });
});

describe('files', () => {
  it('link: a signed link and no attachment, however small the file, and the email says the setting is why', async () => {
    const key = await keyWith({ email_files: 'link' });
    const body = new FormData();
    body.set('access_key', key.key);
    body.set('email', 'visitor@example.org');
    body.set('message', 'see attached');
    body.append('file', new Blob([Buffer.from('%PDF-1.4')], { type: 'application/pdf' }), 'small.pdf');
    const response = await fetch(`${h.url}/api/contact-api/`, { method: 'POST', body, headers: { accept: 'application/json' } });
    const id = ((await response.json()) as any).submission_id;
    const mail = await mailFor(id);
    expect(mail.parsed.attachments).toEqual([]);
    const link = /https?:\/\/\S+/.exec(mail.parsed.text ?? '')?.[0];
    expect(link).toBeDefined();
    expect(Buffer.from(await (await fetch(link!)).arrayBuffer()).toString()).toBe('%PDF-1.4');
    expect(mail.parsed.text).toContain("This form's settings send files as links");
    expect(mail.parsed.text).not.toContain('too large');
  });
});

describe('a key made through POST /, the layout left as it is', () => {
  it('delivers with its fields in arrival order, and its owner page lists it', async () => {
    const { postJson } = await import('../support/harness.ts');
    const created = await postJson(`${h.url}/`, { email: 'new-owner@example.test' });
    expect(created.status).toBe(200);
    const { mail } = await send({ key: created.json.key as string }, { subject: 'Hi', company: 'Example Ltd', name: 'Ada' });
    expect(mail.parsed.text).toMatch(/company: Example Ltd[\s\S]*name: Ada/);
    const [row] = await h.sql<{ order: unknown; hidden: unknown }>(
      'select email_field_order as order, email_hidden_fields as hidden from verification_keys where email = $1',
      ['new-owner@example.test'],
    );
    expect(row).toEqual({ order: [], hidden: [] });
  });
});
