// RETENTION_DAYS: a scheduled job deletes old submissions, their attachment rows and their files.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, listObjectKeys, startHarness, type Harness } from '../support/harness.ts';

let h: Harness;
let key: string;
beforeAll(async () => {
  h = await startHarness({ env: { RETENTION_DAYS: '30', RETENTION_INTERVAL_MS: '300' } });
  key = (await h.createKey()).key;
});
afterAll(() => h?.stop());

async function submitWithFile(label: string): Promise<string> {
  const body = new FormData();
  body.set('access_key', key);
  body.set('email', 'a@example.org');
  body.set('message', label);
  body.set('not_email_sent', 'true');
  body.append('file', new Blob([Buffer.from(`file of ${label}`)]), `${label}.txt`);
  const response = await fetch(`${h.url}/api/contact-api/`, { method: 'POST', body, headers: { accept: 'application/json' } });
  return ((await response.json()) as any).submission_id;
}
const age = (id: string, days: number) => h.sql(`update submissions set created_at = now() - make_interval(days => $2) where id = $1`, [id, days]);
const exists = async (id: string) => (await h.sql('select id from submissions where id = $1', [id])).length === 1;
const objectsOf = async (id: string) => (await listObjectKeys(h.storage)).filter((objectKey) => objectKey.includes(id));

describe('retention', () => {
  it('deletes submissions older than RETENTION_DAYS with their attachment rows and files, and keeps the rest', async () => {
    const old = await submitWithFile('old');
    const recent = await submitWithFile('recent');
    const undelivered = await submitWithFile('undelivered');
    // Its file is stored; seen before it is aged, since the job runs every 300 ms.
    expect(await objectsOf(old)).toHaveLength(1);
    await h.sql(`update submissions set email_status = 'retrying' where id = $1`, [undelivered]);
    await age(undelivered, 40);
    await age(old, 40);

    await eventually(async () => ((await exists(old)) ? undefined : true), 15_000, 'the old submission to be deleted');
    expect(await h.sql('select id from attachments where submission_id = $1', [old])).toEqual([]);
    expect(await objectsOf(old)).toEqual([]);
    expect(await exists(recent)).toBe(true);
    expect(await objectsOf(recent)).toHaveLength(1);
    expect(await exists(undelivered)).toBe(true);
  });

  it('deletes an old sent submission with its delivery history', async () => {
    const response = await fetch(`${h.url}/api/contact-api/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ access_key: key, email: 'a@example.org', message: 'emailed, then old' }),
    });
    const id = ((await response.json()) as { submission_id: string }).submission_id;
    const attempts = () => h.sql('select outcome from delivery_attempts where submission_id = $1', [id]);
    await eventually(async () => ((await attempts()).length === 1 ? true : undefined), 15_000, 'the attempt to be recorded');
    await age(id, 40);
    await eventually(async () => ((await exists(id)) ? undefined : true), 15_000, 'the old submission to be deleted');
    expect(await attempts()).toEqual([]);
  });
});
