// GET /admin/submissions.csv: a key's submissions with their custom fields as columns.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../support/harness.ts';
import { adminClient, submitJson } from '../support/client.ts';
import { form, request } from '../support/http.ts';
import { ago, buildKeyRecipient, buildRecipientCopy, buildSubmission } from '../support/factories.ts';

const TOKEN = 'csv-export-admin-token-0123';
let h: Harness;
beforeAll(async () => {
  h = await startHarness({ worker: false, env: { ADMIN_TOKEN: TOKEN } });
});
afterAll(() => h?.stop());
const admin = adminClient(() => h, TOKEN);

/** A small RFC 4180 reader, enough to check what a spreadsheet would see. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const char = text[i]!;
    if (quoted) {
      if (char === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (char === '"') quoted = false;
      else cell += char;
    } else if (char === '"') quoted = true;
    else if (char === ',') {
      row.push(cell);
      cell = '';
    } else if (char === '\r' && text[i + 1] === '\n') {
      row.push(cell);
      rows.push(row);
      row = [];
      cell = '';
      i++;
    } else cell += char;
  }
  return rows;
}

describe('CSV export', () => {
  it('streams the submissions of a key with one column per custom field', async () => {
    const key = await h.createKey();
    const other = await h.createKey();
    const first = await submitJson(h, { access_key: key.key, email: 'a@example.org', message: 'Hello, "world"\nline 2', company: 'Acme', topic: 'sales' });
    const second = await request(`${h.url}/api/contact-api/`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: form([
        ['access_key', key.key],
        ['email', 'b@example.org'],
        ['message', 'm'],
        ['topic', 'support'],
        ['topic', 'billing'],
        ['note', '=HYPERLINK("http://evil")'],
      ]),
    });
    await submitJson(h, { access_key: other.key, email: 'c@example.org', message: 'not this key', secret: 'x' });

    const response = await admin('GET', `/admin/submissions.csv?key=${key.key}`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(response.headers.get('content-disposition')).toContain('submissions.csv');
    const [header, ...rows] = parseCsv(response.text);
    expect(header).toEqual([
      'submission_id',
      'created_at',
      'email',
      'subject',
      'message',
      'email_status',
      'sent_at',
      'bounce_type',
      'bounce_status',
      'bounce_diagnostic',
      'bounced_at',
      'spam_verdict',
      'spam_score',
      'spam_reasons',
      'spam_mark',
      'autoresponse',
      'recipient_copies',
      'company',
      'topic',
      'note',
    ]);
    expect(rows).toHaveLength(2);
    const byId = Object.fromEntries(rows.map((row) => [row[0], row]));
    expect(byId[first.json.submission_id]!.slice(4, 5)).toEqual(['Hello, "world"\nline 2']);
    expect(byId[first.json.submission_id]!.slice(7, 17)).toEqual(['', '', '', '', '', '', '', '', '', '']);
    expect(byId[first.json.submission_id]!.slice(17)).toEqual(['Acme', 'sales', '']);
    expect(byId[second.json.submission_id]!.slice(17)).toEqual(['', 'support\nbilling', `'=HYPERLINK("http://evil")`]);
  });

  it('says what became of the autoresponse and of each copy to an added recipient', async () => {
    const key = await h.createKey();
    const copied = await buildSubmission(h, { key, status: 'sent' });
    await h.sql(`update submissions set autoresponse = 'limit_address' where id = $1`, [copied.id]);
    // Copies are listed in the order their addresses were added.
    const ana = await buildKeyRecipient(h, { key, email: 'ana@example.org', createdAt: ago({ minutes: 2 }) });
    const ben = await buildKeyRecipient(h, { key, email: 'ben@example.org', createdAt: ago({ minutes: 1 }) });
    await buildRecipientCopy(h, { submission: copied, recipient: ana, status: 'sent' });
    await buildRecipientCopy(h, { submission: copied, recipient: ben, status: 'bounced' });
    const alone = await buildSubmission(h, { key, status: 'sent' });

    const [header, ...rows] = parseCsv((await admin('GET', `/admin/submissions.csv?key=${key.key}`)).text);
    const column = (row: string[] | undefined, name: string) => row?.[header!.indexOf(name)];
    const byId = new Map(rows.map((row) => [row[0], row]));
    expect(column(byId.get(copied.id), 'autoresponse')).toBe('limit_address');
    expect(column(byId.get(copied.id), 'recipient_copies')).toBe('ana@example.org sent, ben@example.org bounced');
    expect(column(byId.get(alone.id), 'autoresponse')).toBe('');
    expect(column(byId.get(alone.id), 'recipient_copies')).toBe('');
  });

  it('quotes a cell a spreadsheet splitting on ; would cut, and no piece of it is a formula', async () => {
    const key = await h.createKey();
    await submitJson(h, { access_key: key.key, email: 'a@example.org', message: 'x;=1+1;y', note: 'a\t@SUM(A1)' });
    const response = await admin('GET', `/admin/submissions.csv?key=${key.key}`);
    expect(response.status).toBe(200);
    // What Excel reads with ; as the separator: every cell of the row, split as it splits them.
    const row = response.text.split('\r\n')[1]!;
    expect(row).toContain(`,"x;'=1+1;y",`);
    expect(row).toContain(`,"a\t'@SUM(A1)"`);
    const pieces = row.split(/[;\t]/);
    expect(pieces.filter((piece) => /^[=+\-@]/.test(piece))).toEqual([]);
    expect(parseCsv(response.text)[1]!.slice(4, 5)).toEqual(["x;'=1+1;y"]);
  });

  it('needs the admin token and a key', async () => {
    expect((await admin('GET', '/admin/submissions.csv?key=x', undefined, null)).status).toBe(401);
    expect((await admin('GET', '/admin/submissions.csv')).status).toBe(400);
  });
});
