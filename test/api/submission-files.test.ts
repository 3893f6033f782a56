// Files in multipart submissions: streamed to S3, recorded as attachment rows, refused over the
// limits with nothing left behind (no object, no row, no email), and client names never used as paths.
import { createHash, randomBytes } from 'node:crypto';
import { DeleteBucketCommand, CreateBucketCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, listObjectKeys, startHarness, type Harness } from '../support/harness.ts';
import { mailSettled, submissionRow } from '../support/rows.ts';
import { multipartBody, postAndAbort, postRaw, type FilePart, type Part, type PostOptions } from '../support/multipart.ts';
import { count, expected, submitMultipart } from '../support/client.ts';

const MB10 = 10 * 1024 * 1024; // 10,485,760 bytes

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h?.stop());

type AttachmentRow = {
  submission_id: string;
  field_name: string;
  filename: string;
  content_type: string;
  size: string | number;
  storage_key: string;
  sha256: string;
};

const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');

/** `size` bytes of a repeating pattern that differs with `seed`, cheap to build for 10 MB. */
function patterned(size: number, seed: string): Buffer {
  const data = Buffer.alloc(size, `${seed}:0123456789abcdefghijklmnopqrstuvwxyz\n`);
  // Make the ends distinct too, so that a truncated or shifted copy has another hash.
  if (size >= 8) {
    data.write('BEGIN', 0);
    data.write('END', size - 3);
  }
  return data;
}

async function storedObject(storage: Harness['storage'], key: string): Promise<{ sha256: string; size: number }> {
  const stream = await storage.download(key);
  const hash = createHash('sha256');
  let size = 0;
  for await (const chunk of stream) {
    hash.update(chunk as Buffer);
    size += (chunk as Buffer).length;
  }
  return { sha256: hash.digest('hex'), size };
}

function submissionFields(key: string, token: string, extra: Part[] = []): Part[] {
  return [
    { name: 'access_key', value: key },
    { name: 'email', value: 'visitor@example.org' },
    { name: 'message', value: `Files attached. ${token}` },
    ...extra,
  ];
}

const submit = (parts: Part[], options: PostOptions = {}) => submitMultipart(h, parts, options);

async function attachmentsOf(id: string): Promise<AttachmentRow[]> {
  return h.sql<AttachmentRow>('select * from attachments where submission_id = $1 order by created_at, storage_key', [id]);
}

type Snapshot = { submissions: number; attachments: number; objects: string[] };

async function snapshot(harness: Harness = h): Promise<Snapshot> {
  return {
    submissions: await count(harness, 'submissions'),
    attachments: await count(harness, 'attachments'),
    objects: (await listObjectKeys(harness.storage)).sort(),
  };
}

/** Nothing of a refused request stays: no submission with its token, no new row, no new object, no email. */
async function expectNothingLeft(before: Snapshot, token: string, harness: Harness = h): Promise<void> {
  // A refusal is answered only once every upload has ended and its object is deleted (a dropped
  // request's caller waits for the clean-up); a row saved by mistake would bring an email, which
  // has come by the time the emails have settled.
  await mailSettled(harness);
  expect(await harness.sql('select id from submissions where message like $1', [`%${token}%`])).toEqual([]);
  expect(await snapshot(harness)).toEqual(before);
  expect(harness.sink.messages.filter((mail) => mail.parsed.text?.includes(token))).toEqual([]);
}

/** The spec's form-style error body; `otherErrors` allows field errors next to `__all__`. */
function expectFormError(json: any, status: number, options: { otherErrors?: boolean } = {}) {
  expect(json).toEqual({
    success: false,
    message: expect.any(String),
    errors: options.otherErrors ? expect.objectContaining({ __all__: [json?.message] }) : { __all__: [json?.message] },
    ...(status >= 500 ? { request_id: expect.any(String) } : {}),
  });
}

/** Resolves once the bucket holds an object that `before` did not. */
async function waitForNewObject(before: Snapshot): Promise<void> {
  await eventually(
    async () => {
      const objects = await listObjectKeys(h.storage);
      return objects.some((object) => !before.objects.includes(object)) ? true : undefined;
    },
    10_000,
    'a new object in the bucket',
  );
}

const token = () => `token-${randomBytes(6).toString('hex')}`;

describe('multipart submissions with files', () => {
  it('stores several files under several fields byte for byte, records them and delivers the email', async () => {
    const key = await h.createKey({ email: 'owner-files@example.test' });
    const marker = token();
    const files: FilePart[] = [
      { name: 'files', filename: 'first.txt', contentType: 'text/plain', data: patterned(12_345, 'first') },
      { name: 'files', filename: 'second.bin', contentType: 'application/octet-stream', data: patterned(200_000, 'second') },
      { name: 'cv', filename: 'cv.pdf', contentType: 'application/pdf', data: patterned(70_001, 'cv') },
    ];
    // Fields before, between and after the files.
    const parts: Part[] = [
      { name: 'access_key', value: key.key },
      files[0]!,
      { name: 'email', value: 'visitor@example.org' },
      files[1]!,
      { name: 'message', value: `Please see my CV. ${marker}` },
      files[2]!,
      { name: 'company', value: 'Acme' },
    ];

    const response = await submit(parts);

    expect(response.status).toBe(200);
    expect(response.json).toEqual({
      success: true,
      message: 'Message sent successfully.',
      submission_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      attachments: 3,
      email_status: 'queued',
    });
    const id = response.json.submission_id as string;

    const rows = await attachmentsOf(id);
    expect(rows).toHaveLength(3);
    for (const file of files) {
      const row = rows.find((candidate) => candidate.filename === file.filename);
      expect(row, `attachment row for ${file.filename}`).toMatchObject({
        submission_id: id,
        field_name: file.name,
        filename: file.filename,
        content_type: file.contentType,
        sha256: sha256(file.data),
      });
      expect(Number(row!.size)).toBe(file.data.length);
      expect(row!.storage_key.startsWith(`submissions/${id}/`)).toBe(true);
      expect(await storedObject(h.storage, row!.storage_key)).toEqual({ sha256: sha256(file.data), size: file.data.length });
    }
    expect(new Set(rows.map((row) => row.storage_key)).size).toBe(3);
    const objects = (await listObjectKeys(h.storage)).filter((object) => object.startsWith(`submissions/${id}/`));
    expect(objects.sort()).toEqual(rows.map((row) => row.storage_key).sort());

    const submission = await eventually(async () => {
      const found = await submissionRow(h, id);
      return found?.email_status === 'sent' ? found : undefined;
    });
    expect(submission.custom_fields).toEqual([['company', 'Acme']]);
    const mail = await eventually(async () => h.sink.messages.find((candidate) => candidate.parsed.text?.includes(marker)));
    expect(mail.envelope.to).toEqual(['owner-files@example.test']);
    for (const file of files) expect(mail.parsed.text).toContain(`${file.filename} (${file.contentType}, ${file.data.length} bytes)`);
  });

  it('accepts a file of exactly 10 MB', async () => {
    const key = await h.createKey();
    const data = patterned(MB10, 'ten-mb');
    const response = await submit(submissionFields(key.key, token(), [{ name: 'big', filename: 'big.bin', data }]), { timeoutMs: 30_000 });

    expect(response.status).toBe(200);
    expect(response.json).toMatchObject({ success: true, attachments: 1 });
    const [row, ...others] = await attachmentsOf(response.json.submission_id);
    expect(others).toEqual([]);
    expect(Number(row!.size)).toBe(MB10);
    expect(row!.sha256).toBe(sha256(data));
    expect(await storedObject(h.storage, row!.storage_key)).toEqual({ sha256: sha256(data), size: MB10 });
  });

  it('refuses a file of 10 MB and one byte with 413, deleting the files already stored and saving nothing', async () => {
    const key = await h.createKey();
    const marker = token();
    const before = await snapshot();
    // A small file first: it is stored before the big one crosses the limit, and must go again.
    const parts = submissionFields(key.key, marker, [
      { name: 'small', filename: 'small.txt', contentType: 'text/plain', data: patterned(1_000, 'small') },
      { name: 'big', filename: 'big.bin', data: patterned(MB10 + 1, 'too-big') },
    ]);

    const response = await submit(parts, { timeoutMs: 30_000 });

    expect(response.status).toBe(413);
    expectFormError(response.json, 413);
    expect(response.json.message).toMatch(/10 ?MB|10,?485,?760/);
    await expectNothingLeft(before, marker);
  });

  it('answers 413 without reading the rest of a large body', async () => {
    const key = await h.createKey();
    const marker = token();
    const before = await snapshot();
    // 10 MB and one byte, then 40 MB more: far more than socket buffers hold, so the answer can only
    // arrive before the whole body is written if the server stops reading at the limit.
    const parts = submissionFields(key.key, marker, [
      { name: 'big', filename: 'big.bin', data: patterned(MB10 + 1, 'too-big') },
      { name: 'more', filename: 'more.bin', data: patterned(4 * MB10, 'more') },
    ]);

    const response = await submit(parts, { timeoutMs: 30_000 });

    expect(response.status).toBe(413);
    expectFormError(response.json, 413);
    expect(response.bodyWritten).toBe(false);
    await expectNothingLeft(before, marker);
  });

  it('accepts 10 files', async () => {
    const key = await h.createKey();
    const files: FilePart[] = Array.from({ length: 10 }, (_, index) => ({
      name: 'files',
      filename: `file-${index + 1}.txt`,
      contentType: 'text/plain',
      data: patterned(1_000 + index, `file-${index}`),
    }));

    const response = await submit(submissionFields(key.key, token(), files));

    expect(response.status).toBe(200);
    expect(response.json).toMatchObject({ success: true, attachments: 10 });
    const id = response.json.submission_id as string;
    const rows = await attachmentsOf(id);
    expect(rows.map((row) => row.filename).sort()).toEqual(files.map((file) => file.filename).sort());
    for (const file of files) {
      const row = rows.find((candidate) => candidate.filename === file.filename)!;
      expect(row.sha256).toBe(sha256(file.data));
      expect(await storedObject(h.storage, row.storage_key)).toEqual({ sha256: sha256(file.data), size: file.data.length });
    }
  });

  const elevenFiles = (): FilePart[] =>
    Array.from({ length: 11 }, (_, index) => ({
      name: 'files',
      filename: `file-${index + 1}.txt`,
      contentType: 'text/plain',
      data: patterned(50_000, `eleven-${index}`),
    }));

  it('refuses 11 files with 400 naming the limit, deleting the 10 files already stored', async () => {
    const key = await h.createKey();
    const marker = token();
    const before = await snapshot();
    const files = elevenFiles();
    const { body, contentType } = multipartBody(submissionFields(key.key, marker, files));
    // Hold the body back in the 11th file's part headers until the first ten are in the bucket.
    const pauseAfter = body.indexOf('filename="file-11.txt"');

    const response = await postRaw(
      `${h.url}/api/contact-api/`,
      body,
      { 'content-type': contentType },
      {
        pauseAfter,
        whilePaused: async () => {
          await eventually(
            async () => {
              const added = (await listObjectKeys(h.storage)).filter((object) => !before.objects.includes(object));
              return added.length === 10 ? true : undefined;
            },
            10_000,
            'ten objects in the bucket',
          );
        },
      },
    );

    expect(response.status).toBe(400);
    expectFormError(response.json, 400);
    expect(response.json.message).toMatch(/\b10\b/);
    expect(response.json.message).toMatch(/files/i);
    await expectNothingLeft(before, marker);
  });

  it('refuses 11 files sent in one go, leaving no object even of uploads still in flight', async () => {
    const key = await h.createKey();
    const marker = token();
    const before = await snapshot();

    const response = await submit(submissionFields(key.key, marker, elevenFiles()));

    expect(response.status).toBe(400);
    expectFormError(response.json, 400);
    expect(response.json.message).toMatch(/\b10\b/);
    await expectNothingLeft(before, marker);
  });

  it('ignores an empty file input (no name, no bytes)', async () => {
    const key = await h.createKey();
    const before = await snapshot();
    const response = await submit(
      submissionFields(key.key, token(), [{ name: 'attachment', filename: '', contentType: 'application/octet-stream', data: Buffer.alloc(0) }]),
    );

    expect(response.status).toBe(200);
    expect(response.json).toMatchObject({ success: true, attachments: 0, email_status: 'queued' });
    expect(await attachmentsOf(response.json.submission_id)).toEqual([]);
    expect((await listObjectKeys(h.storage)).filter((object) => object.includes(response.json.submission_id))).toEqual([]);
    expect((await snapshot()).objects).toEqual(before.objects);
  });

  it('does not count empty file inputs against the 10-file limit', async () => {
    const key = await h.createKey();
    const empty: FilePart = { name: 'empty', filename: '', contentType: 'application/octet-stream', data: Buffer.alloc(0) };
    const files: FilePart[] = Array.from({ length: 10 }, (_, index) => ({
      name: 'files',
      filename: `f${index}.txt`,
      contentType: 'text/plain',
      data: patterned(100, `f${index}`),
    }));

    const response = await submit(submissionFields(key.key, token(), [empty, ...files.slice(0, 5), empty, ...files.slice(5), empty]));

    expect(response.status).toBe(200);
    expect(response.json).toMatchObject({ success: true, attachments: 10 });
    const rows = await attachmentsOf(response.json.submission_id);
    expect(rows.map((row) => row.filename).sort()).toEqual(files.map((file) => file.filename).sort());
    const objects = (await listObjectKeys(h.storage)).filter((object) => object.startsWith(`submissions/${response.json.submission_id}/`));
    expect(objects.sort()).toEqual(rows.map((row) => row.storage_key).sort());
  });
});

describe('odd file names', () => {
  // Each case: how the client sends the name, and what the attachment row may be expected to show.
  const cases: Array<{ label: string; part: Omit<FilePart, 'name' | 'data'>; expected?: string; contains?: string[] }> = [
    { label: 'path traversal', part: { filename: '../../etc/passwd' }, expected: 'passwd' },
    { label: 'path traversal in filename*', part: { filenameStar: '../../../root/.ssh/authorized_keys' }, expected: 'authorized_keys' },
    { label: 'Windows path', part: { filename: 'C:\\evil\\a.txt' }, expected: 'a.txt' },
    { label: 'CRLF', part: { filenameStar: 'evil\r\nX-Injected: yes.txt' }, contains: ['evil', 'yes.txt'] },
    { label: 'CRLF and a path', part: { filenameStar: '..\\..\r\n/etc/pass\rwd\n' }, contains: ['pass', 'wd'] },
    { label: 'unicode', part: { filename: 'résumé 履歴書 📄.pdf' }, expected: 'résumé 履歴書 📄.pdf' },
    { label: 'very long', part: { filename: `${'a'.repeat(1_000)}.txt` } },
    { label: 'very long unicode', part: { filenameStar: `${'😀'.repeat(400)}.txt` } },
    { label: 'only dots', part: { filename: '....' } },
    { label: 'dot dot', part: { filenameStar: '..' } },
  ];

  it('stores every file under submissions/<id>/ with a clean key and a file name without a path', async () => {
    const key = await h.createKey();
    const files: FilePart[] = cases.map((entry, index) => ({
      name: `f${index}`,
      contentType: 'text/plain',
      data: patterned(500 + index, `odd-${index}`),
      ...entry.part,
    }));

    const response = await submit(submissionFields(key.key, token(), files));

    expect(response.status, response.text).toBe(200);
    expect(response.json).toMatchObject({ success: true, attachments: cases.length });
    const id = response.json.submission_id as string;
    const rows = await attachmentsOf(id);
    expect(rows).toHaveLength(cases.length);
    const prefix = `submissions/${id}/`;

    for (const [index, entry] of cases.entries()) {
      const row = rows.find((candidate) => candidate.field_name === `f${index}`);
      expect(row, entry.label).toBeDefined();
      const { storage_key: storageKey, filename } = row!;

      expect(storageKey.startsWith(prefix), `${entry.label}: ${storageKey}`).toBe(true);
      const rest = storageKey.slice(prefix.length);
      expect(rest.length, `${entry.label}: ${storageKey}`).toBeGreaterThan(0);
      expect(rest, entry.label).not.toMatch(/[/\\]|\.\.|[\u0000-\u001f\u007f]/);
      expect(Buffer.byteLength(storageKey), entry.label).toBeLessThanOrEqual(1024);
      expect(await storedObject(h.storage, storageKey), entry.label).toEqual({ sha256: sha256(files[index]!.data), size: files[index]!.data.length });

      expect(filename, entry.label).not.toMatch(/[/\\\r\n\u0000-\u001f\u007f]/);
      expect(['', '.', '..'], entry.label).not.toContain(filename);
      expect(Array.from(filename).length, entry.label).toBeLessThanOrEqual(255);
      if (entry.expected) expect(filename, entry.label).toBe(entry.expected);
      for (const piece of entry.contains ?? []) expect(filename, entry.label).toContain(piece);
    }
    expect(new Set(rows.map((row) => row.storage_key)).size).toBe(cases.length);
    const objects = (await listObjectKeys(h.storage)).filter((object) => object.startsWith(prefix));
    expect(objects.sort()).toEqual(rows.map((row) => row.storage_key).sort());
  });
});

describe('malformed multipart bodies', () => {
  it('answers a multipart body without a boundary with 400', async () => {
    const key = await h.createKey();
    const marker = token();
    const before = await snapshot();
    const { body } = multipartBody(submissionFields(key.key, marker));
    const response = await postRaw(`${h.url}/api/contact-api/`, body, { 'content-type': 'multipart/form-data' });

    expect(response.status).toBe(400);
    expectFormError(response.json, 400);
    await expectNothingLeft(before, marker);
  });

  it('answers a body without its closing boundary with 400, deleting the file already stored', async () => {
    const key = await h.createKey();
    const marker = token();
    const before = await snapshot();
    const complete: FilePart = { name: 'complete', filename: 'complete.txt', contentType: 'text/plain', data: patterned(2_000, 'complete') };
    const parts = submissionFields(key.key, marker, [complete, { name: 'cut', filename: 'cut.txt', contentType: 'text/plain', data: patterned(2_000, 'cut') }]);
    const { body, contentType } = multipartBody(parts, { closed: false });
    // The last part is cut short: no CRLF, no boundary after its bytes; the HTTP body itself is complete.
    const truncated = body.subarray(0, body.length - 500);
    // Hold the body back after the first file's closing boundary until that file is in the bucket,
    // so that the refusal has an object to delete.
    const pauseAfter = body.indexOf(complete.data) + complete.data.length + 200;

    const response = await postRaw(
      `${h.url}/api/contact-api/`,
      truncated,
      { 'content-type': contentType },
      {
        pauseAfter,
        whilePaused: () => waitForNewObject(before),
      },
    );

    expect(response.status).toBe(400);
    expectFormError(response.json, 400);
    await expectNothingLeft(before, marker);

    // The server still answers.
    const next = await submit(submissionFields(key.key, token()));
    expect(next.status).toBe(200);
  });

  it('survives a client that drops the connection in the middle of a file, and cleans up', async () => {
    const key = await h.createKey();
    const marker = token();
    const before = await snapshot();
    const parts = submissionFields(key.key, marker, [
      { name: 'complete', filename: 'complete.txt', contentType: 'text/plain', data: patterned(3_000, 'complete') },
      { name: 'cut', filename: 'cut.bin', data: patterned(1_000_000, 'cut') },
    ]);
    const { body, contentType } = multipartBody(parts);
    const prefix = body.subarray(0, body.length - 600_000);

    await postAndAbort(`${h.url}/api/contact-api/`, { 'Content-Type': contentType }, prefix, body.length, async () => {
      // Wait until the complete file is in the bucket, so that there is something to clean up.
      await waitForNewObject(before);
    });

    // The object stored for the dropped request goes, and nothing is saved.
    await eventually(
      async () => ((await listObjectKeys(h.storage)).sort().join() === before.objects.join() ? true : undefined),
      10_000,
      'the clean-up of the dropped request',
    );
    await expectNothingLeft(before, marker);

    expect((await fetch(`${h.url}/healthz`)).status).toBe(200);
    const next = await submit(submissionFields(key.key, token(), [{ name: 'f', filename: 'after.txt', data: patterned(10, 'after') }]));
    expect(next.status).toBe(200);
    expect(next.json).toMatchObject({ success: true, attachments: 1 });
  });
});

describe('refusals after files were stored', () => {
  it('refuses an invalid key sent after a file with 403 and deletes the file', async () => {
    const marker = token();
    const before = await snapshot();
    const parts: Part[] = [
      { name: 'file', filename: 'early.txt', contentType: 'text/plain', data: patterned(300_000, 'early') },
      { name: 'access_key', value: '00000000-0000-4000-8000-000000000000' },
      { name: 'email', value: 'visitor@example.org' },
      { name: 'message', value: `hi ${marker}` },
    ];

    const response = await submit(parts);

    expect(response.status).toBe(403);
    expect(response.json).toEqual(expected.invalidKey);
    await expectNothingLeft(before, marker);
  });

  it('refuses missing fields sent after a file with 400 and deletes the file', async () => {
    const key = await h.createKey();
    const marker = token();
    const before = await snapshot();
    const parts: Part[] = [
      { name: 'file', filename: 'early.txt', contentType: 'text/plain', data: patterned(3_000, 'early') },
      { name: 'access_key', value: key.key },
      { name: 'message', value: `hi ${marker}` },
    ];

    const response = await submit(parts);

    expect(response.status).toBe(400);
    expect(response.json).toMatchObject({ success: false, message: 'Missing required fields.', errors: { email: ['This field is required.'] } });
    await expectNothingLeft(before, marker);
  });
});

describe('file field names', () => {
  // attachments.field_name holds 200 characters, the bound of any field name: a longer name is the
  // client's mistake, never a 500.
  it('does not answer a file under a 300-character field name with a 500', async () => {
    const key = await h.createKey();
    const marker = token();
    const before = await snapshot();
    const fieldName = `upload_${'n'.repeat(293)}`;

    const response = await submit(
      submissionFields(key.key, marker, [{ name: fieldName, filename: 'a.txt', contentType: 'text/plain', data: patterned(1_000, 'long-field') }]),
    );

    expect(response.status, response.text).toBeLessThan(500);
    if (response.status === 200) {
      const [row] = await attachmentsOf(response.json.submission_id);
      expect(row!.field_name.length).toBeLessThanOrEqual(200);
    } else {
      expect(response.status).toBe(400);
      expectFormError(response.json, 400, { otherErrors: true });
      await expectNothingLeft(before, marker);
    }
  });
});

describe('storage failure', () => {
  // A harness of its own whose bucket is removed: every upload fails as it would against a broken S3.
  let broken: Harness;
  beforeAll(async () => {
    broken = await startHarness({ worker: false });
    await broken.storage.client.send(new DeleteBucketCommand({ Bucket: broken.storage.bucket }));
  });
  afterAll(async () => {
    if (!broken) return;
    // stop() empties and deletes the bucket: give it one again.
    await broken.storage.client.send(new CreateBucketCommand({ Bucket: broken.storage.bucket })).catch(() => undefined);
    await broken.stop();
  });

  const brokenSnapshot = async () => {
    return { submissions: await count(broken, 'submissions'), attachments: await count(broken, 'attachments') };
  };

  it.each([
    ['a small file', 20_000],
    ['a file larger than one upload part', 6 * 1024 * 1024],
    ['a file of 9 MB', 9 * 1024 * 1024],
  ])('answers 500 form-style with a request id and saves nothing, for %s', async (_label, size) => {
    const key = await broken.createKey();
    const marker = token();
    const before = await brokenSnapshot();

    const response = await submitMultipart(
      broken,
      submissionFields(key.key, marker, [{ name: 'f', filename: 'doomed.bin', data: patterned(size, 'doomed') }]),
      {
        timeoutMs: 15_000,
      },
    );

    expect(response.status).toBe(500);
    expectFormError(response.json, 500);
    expect(response.json.request_id.length).toBeGreaterThan(0);
    expect(await broken.sql('select id from submissions where message like $1', [`%${marker}%`])).toEqual([]);
    expect(await brokenSnapshot()).toEqual(before);
  });
});

describe('parts without a name', () => {
  it('answers a file or field part whose Content-Disposition has no name without crashing', async () => {
    const h2 = await startHarness({ worker: false });
    try {
      const key = await h2.createKey();
      const boundary = 'noNameBoundary';
      const body = [
        `--${boundary}\r\nContent-Disposition: form-data; name="access_key"\r\n\r\n${key.key}\r\n`,
        `--${boundary}\r\nContent-Disposition: form-data; name="email"\r\n\r\na@example.org\r\n`,
        `--${boundary}\r\nContent-Disposition: form-data; name="message"\r\n\r\nm\r\n`,
        `--${boundary}\r\nContent-Disposition: form-data; filename="nameless.txt"\r\n\r\nfile without a field name\r\n`,
        `--${boundary}\r\nContent-Disposition: form-data\r\n\r\nfield without a name\r\n`,
        `--${boundary}--\r\n`,
      ].join('');
      const response = await fetch(`${h2.url}/api/contact-api/`, {
        method: 'POST',
        headers: { 'content-type': `multipart/form-data; boundary=${boundary}`, accept: 'application/json' },
        body,
      });
      expect(response.status).toBe(200);
      const json = (await response.json()) as any;
      expect(json.attachments).toBe(1);
      expect((await fetch(`${h2.url}/healthz`)).status).toBe(200);
    } finally {
      await h2.stop();
    }
  });
});
