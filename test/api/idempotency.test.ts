// Idempotency-Key on submissions: a client that retries the same request with the same key gets
// the first answer and one stored submission (one email), also when the retries race each other;
// the same key with another request is refused and stores nothing; a multipart retry counts by its
// fields and files, not its boundary; the key answers the same for at least 24 hours.
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { multipartBody, postRaw, type Part } from '../support/multipart.ts';
import { CONTACT_API, count, submitJson } from '../support/client.ts';
import { eventually, startHarness, type Harness, type TestKey } from '../support/harness.ts';
import { mailSettled } from '../support/rows.ts';

let h: Harness;
let key: TestKey;

beforeAll(async () => {
  h = await startHarness();
  key = await h.createKey();
});
afterAll(async () => {
  await h?.stop();
});

const body = (message: string) => ({ access_key: key.key, email: 'retrying@visitors.example', message });
const withKey = (idempotencyKey: string) => ({ 'Idempotency-Key': idempotencyKey });
const rowsOf = async (message: string) => (await h.sql('select id from submissions where message = $1', [message])).length;

describe('Idempotency-Key', () => {
  it('answers a repeated request as the first, with one submission and one email', async () => {
    const message = 'Once only, however often it is sent.';
    const first = await submitJson(h, body(message), withKey('order-1001'));
    expect(first.status).toBe(200);
    const again = await submitJson(h, body(message), withKey('order-1001'));
    expect(again.status).toBe(200);
    expect(again.json.submission_id).toBe(first.json.submission_id);
    expect(again.json).toMatchObject({ success: true, message: 'Message sent successfully.', attachments: 0 });
    expect(await rowsOf(message)).toBe(1);
    await eventually(async () => h.sink.messages.find((mail) => mail.parsed.text?.includes(message)), 20_000, 'the email');
    // The email is sent once: a late retry finds it sent, and sends nothing more.
    const late = await submitJson(h, body(message), withKey('order-1001'));
    expect(late.json.submission_id).toBe(first.json.submission_id);
    await mailSettled(h);
    expect(h.sink.messages.filter((mail) => mail.parsed.text?.includes(message))).toHaveLength(1);
  });

  it('stores one submission for retries that race each other', async () => {
    const message = 'Sent five times at once.';
    const answers = await Promise.all(Array.from({ length: 5 }, () => submitJson(h, body(message), withKey('race-7'))));
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200, 200, 200]);
    expect(new Set(answers.map((answer) => answer.json.submission_id)).size).toBe(1);
    expect(await rowsOf(message)).toBe(1);
  });

  it('refuses the same key with another request (422), storing nothing', async () => {
    const first = await submitJson(h, body('The first request.'), withKey('reused-key'));
    expect(first.status).toBe(200);
    const before = await count(h, 'submissions');
    const other = await submitJson(h, body('Another request under the same key.'), withKey('reused-key'));
    expect(other.status).toBe(422);
    expect(other.json).toEqual({
      success: false,
      message: 'This Idempotency-Key was used with another request.',
      errors: {
        'Idempotency-Key': ['This Idempotency-Key was used with another request: send a new key for a new submission.'],
        __all__: ['This Idempotency-Key was used with another request.'],
      },
    });
    expect(await count(h, 'submissions')).toBe(before);
  });

  it("keeps one key's Idempotency-Keys apart from another's", async () => {
    const other = await h.createKey();
    const mine = await submitJson(h, body('Mine.'), withKey('shared-name'));
    const theirs = await submitJson(h, { ...body('Theirs.'), access_key: other.key }, withKey('shared-name'));
    expect(theirs.status).toBe(200);
    expect(theirs.json.submission_id).not.toBe(mine.json.submission_id);
  });

  it('counts a multipart retry by its fields and files, not its boundary, and keeps no second copy of its files', async () => {
    const parts: Part[] = [
      { name: 'access_key', value: key.key },
      { name: 'email', value: 'files@visitors.example' },
      { name: 'message', value: 'With a file, twice.' },
      { name: 'cv', filename: 'cv.txt', contentType: 'text/plain', data: Buffer.from('my cv') },
    ];
    const send = () => {
      const { body: bytes, contentType } = multipartBody(parts);
      return postRaw(`${h.url}${CONTACT_API}`, bytes, { 'content-type': contentType, accept: 'application/json', ...withKey('upload-1') });
    };
    const [first, again] = [await send(), await send()];
    expect(first.status).toBe(200);
    expect(again.status).toBe(200);
    expect(again.json?.submission_id).toBe(first.json?.submission_id);
    expect(again.json?.attachments).toBe(1);
    expect(await rowsOf('With a file, twice.')).toBe(1);
    // The retry's upload was removed: the bucket holds the first request's file alone.
    const stored = async () => (await h.storage.client.send(new ListObjectsV2Command({ Bucket: h.storage.bucket }))).Contents ?? [];
    const [file] = await h.sql<{ storage_key: string }>('select storage_key from attachments where submission_id = $1', [first.json?.submission_id]);
    expect((await stored()).map((object) => object.Key)).toContain(file!.storage_key);
    await eventually(async () => ((await stored()).length === 1 ? true : undefined), 10_000, 'the retry’s file removed');
  });

  it('answers the same for at least 24 hours', async () => {
    const message = 'A day later.';
    const first = await submitJson(h, body(message), withKey('day-old'));
    await h.sql(`update idempotency_keys set created_at = now() - interval '25 hours' where idempotency_key = 'day-old'`);
    const again = await submitJson(h, body(message), withKey('day-old'));
    expect(again.json.submission_id).toBe(first.json.submission_id);
    expect(await rowsOf(message)).toBe(1);
  });

  it.each([
    ['longer than 255 characters', 'k'.repeat(256)],
    ['with a space', 'two words'],
    ['with a non-ASCII character', 'clé'],
  ])('refuses a key %s (400), storing nothing', async (_what, value) => {
    const before = await count(h, 'submissions');
    const refused = await submitJson(h, body('Bad key.'), { 'Idempotency-Key': value });
    expect(refused.status).toBe(400);
    expect(refused.json.errors['Idempotency-Key']).toEqual(['An Idempotency-Key is 1 to 255 visible ASCII characters.']);
    expect(await count(h, 'submissions')).toBe(before);
  });
});
