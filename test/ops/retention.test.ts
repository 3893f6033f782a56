// RETENTION_DAYS: a scheduled job deletes old submissions, their attachment rows and their files.
// The same job deletes spam campaign votes, settled autoresponses and the copies held for added
// recipients past their days, whatever RETENTION_DAYS says.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CAMPAIGN_VOTE_DAYS } from '../../src/shared/spam/spam-campaigns.ts';
import { submitJson } from '../support/client.ts';
import { AUTORESPONSE_ROWS_KEPT_DAYS } from '../../src/shared/autoresponses/autoresponses.ts';
import { ago, buildAutoresponse, buildKeyRecipient, buildRecipientCopy, buildSubmission, updateCampaignVote, updateSubmission } from '../support/factories.ts';
import { eventually, listObjectKeys, startHarness, type Harness } from '../support/harness.ts';
import { submissionExists } from '../support/rows.ts';
import { signIn } from '../support/owner.ts';

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
const age = (id: string, days: number) => updateSubmission(h, id, { createdAt: ago({ days }) });
const exists = (id: string) => submissionExists(h, id);
const objectsOf = async (id: string) => (await listObjectKeys(h.storage)).filter((objectKey) => objectKey.includes(id));

describe('retention', () => {
  it('deletes submissions older than RETENTION_DAYS with their attachment rows and files, and keeps the rest', async () => {
    const old = await submitWithFile('old');
    const recent = await submitWithFile('recent');
    const undelivered = await submitWithFile('undelivered');
    // Its file is stored; seen before it is aged, since the job runs every 300 ms.
    expect(await objectsOf(old)).toHaveLength(1);
    await updateSubmission(h, undelivered, { status: 'retrying' });
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

  it(`deletes spam campaign votes older than ${CAMPAIGN_VOTE_DAYS} days, and keeps newer ones`, async () => {
    const voter = await h.createKey();
    const owner = await signIn(h, voter.email);
    const ids: string[] = [];
    for (const topic of ['backlinks', 'solar panels']) {
      const message = `We offer cheap ${topic} for your business with guaranteed results within one week, call us now to hear all about our offer`;
      const response = await submitJson(h, { access_key: voter.key, email: 'visitor@example.org', message });
      ids.push(response.json.submission_id as string);
    }
    for (const id of ids) expect((await owner.api('POST', `/submissions/${id}/spam-mark`, { mark: 'spam' })).status).toBe(200);
    const votes = async () =>
      (await h.sql<{ submission_id: string }>('select submission_id from spam_campaign_votes order by marked_at')).map((row) => row.submission_id);
    expect((await votes()).sort()).toEqual([...ids].sort());

    await updateCampaignVote(h, ids[0]!, { markedAt: ago({ days: CAMPAIGN_VOTE_DAYS + 1 }) });
    await updateCampaignVote(h, ids[1]!, { markedAt: ago({ days: CAMPAIGN_VOTE_DAYS - 1 }) });
    await eventually(async () => ((await votes()).includes(ids[0]!) ? undefined : true), 15_000, 'the old vote to be deleted');
    expect(await votes()).toEqual([ids[1]]);
  });

  it(`deletes settled autoresponses older than ${AUTORESPONSE_ROWS_KEPT_DAYS} days (past their 24-hour bounds), and keeps newer or unsettled ones`, async () => {
    const owner = await h.createKey();
    const old = await buildAutoresponse(h, { key: owner, status: 'sent', createdAt: ago({ days: AUTORESPONSE_ROWS_KEPT_DAYS + 1 }) });
    const oldQueued = await buildAutoresponse(h, { key: owner, status: 'retrying', createdAt: ago({ days: AUTORESPONSE_ROWS_KEPT_DAYS + 1 }) });
    const recent = await buildAutoresponse(h, { key: owner, status: 'sent', createdAt: ago({ hours: 23 }) });
    const left = async () => (await h.sql<{ id: string }>('select id from autoresponses where key_id = $1', [owner.id])).map((row) => row.id);
    await eventually(async () => ((await left()).includes(old.id) ? undefined : true), 15_000, 'the old autoresponse to be deleted');
    expect((await left()).toSorted()).toEqual([oldQueued.id, recent.id].toSorted());
  });

  it('deletes copies held for an added recipient that never confirmed, after HELD_TTL_DAYS (7), and keeps newer or sent ones', async () => {
    const owner = await h.createKey();
    const waiting = await buildKeyRecipient(h, { key: owner, confirmed: false });
    // One copy per submission and recipient: each copy here copies a submission of its own.
    const copyOf = async (status: 'held' | 'sent', days: number) =>
      buildRecipientCopy(h, { submission: await buildSubmission(h, { key: owner, status: 'sent' }), recipient: waiting, status, createdAt: ago({ days }) });
    const [old, recent, oldSent] = [await copyOf('held', 8), await copyOf('held', 6), await copyOf('sent', 8)];
    const left = async () => (await h.sql<{ id: string }>('select id from recipient_copies where key_id = $1', [owner.id])).map((row) => row.id);
    await eventually(async () => ((await left()).includes(old.id) ? undefined : true), 15_000, 'the old held copy to be deleted');
    expect((await left()).toSorted()).toEqual([recent.id, oldSent.id].toSorted());
  });
});
