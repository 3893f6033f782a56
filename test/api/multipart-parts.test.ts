// The sequential upload chain readMultipart stores files with, on its own, against the harness's real
// S3 storage. The other parts it is built from (the limits counter, the close-delimiter cut) are
// checked in test/unit/api/multipart-parts.test.ts. The busboy wiring is exercised through HTTP in
// submission-files, field-limits, slow-clients and fuzz tests.
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough, Readable } from 'node:stream';
import { text } from 'node:stream/consumers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/shared/infra/log.ts';
import { HeadObjectCommand } from '@aws-sdk/client-s3';
import { createStorage } from '../../src/shared/infra/storage.ts';
import { createUploadChain, type ChainedFile } from '../../src/api/submissions/upload-chain.ts';
import { listObjectKeys, startHarness, type Harness } from '../support/harness.ts';

const log = createLogger('test', 'silent');
const sha256 = (data: string) => createHash('sha256').update(data).digest('hex');
const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('upload chain', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ worker: false });
  });
  afterAll(() => h?.stop());

  let n = 0;
  const file = (filename: string, extra: Partial<ChainedFile> = {}): ChainedFile => ({
    fieldName: 'upload',
    filename,
    contentType: 'text/plain',
    objectKey: `chain-${(n += 1)}/${filename || 'empty'}`,
    onFirstByte: () => true,
    ...extra,
  });
  const download = async (key: string) => text(await h.storage.download(key));

  it('stores files one after the other, each with its size and hash', async () => {
    const chain = createUploadChain(h.storage, log);
    const events: string[] = [];
    const first = new PassThrough();
    const second = new PassThrough();
    chain.add(first, file('one.txt', { onFirstByte: () => (events.push('first byte of one'), true) }));
    chain.add(second, file('two.txt', { onFirstByte: () => (events.push('first byte of two'), true) }));
    first.write('one-');
    second.end('two');
    for (let i = 0; i < 20; i += 1) await tick();
    events.push('one ends');
    first.end('done');

    const files = await chain.settle();
    expect(events).toEqual(['first byte of one', 'one ends', 'first byte of two']);
    expect(files.map(({ filename, size, sha256: hash }) => ({ filename, size, hash }))).toEqual([
      { filename: 'one.txt', size: 8, hash: sha256('one-done') },
      { filename: 'two.txt', size: 3, hash: sha256('two') },
    ]);
    expect(await download(files[0]!.storageKey)).toBe('one-done');
    expect(await download(files[1]!.storageKey)).toBe('two');
  });

  it('stores nothing for an empty unnamed file and keeps a named empty one', async () => {
    const chain = createUploadChain(h.storage, log);
    const unnamed = file('');
    const named = file('empty.txt');
    chain.add(Readable.from([]), unnamed);
    chain.add(Readable.from([]), named);
    const files = await chain.settle();
    expect(files.map((f) => [f.filename, f.size])).toEqual([['empty.txt', 0]]);
    const keys = await listObjectKeys(h.storage);
    expect(keys).toContain(named.objectKey);
    expect(keys).not.toContain(unnamed.objectKey);
  });

  it('on abort stops the file in flight and deletes the objects already stored', async () => {
    const chain = createUploadChain(h.storage, log);
    const stored = file('stored.txt');
    const inFlight = file('in-flight.txt');
    chain.add(Readable.from([Buffer.from('complete')]), stored);
    const open = new PassThrough();
    chain.add(open, inFlight);
    open.write('partial');
    await expect.poll(() => listObjectKeys(h.storage)).toContain(stored.objectKey);

    await chain.abort(new Error('stop'));
    const keys = await listObjectKeys(h.storage);
    expect(keys).not.toContain(stored.objectKey);
    expect(keys).not.toContain(inFlight.objectKey);
    await expect(chain.settle()).rejects.toThrow();
  });

  it('stops a file whose first byte is refused, with the abort reason', async () => {
    const chain = createUploadChain(h.storage, log);
    const reason = new Error('too many files');
    const refused = file('', {
      onFirstByte: () => {
        void chain.abort(reason);
        return false;
      },
    });
    chain.add(Readable.from([Buffer.from('x')]), refused);
    await expect(chain.settle()).rejects.toBe(reason);
    expect(await listObjectKeys(h.storage)).not.toContain(refused.objectKey);
  });

  it("signs each file's PutObject with that file's own SHA-256 (the payload hash S3 checks)", async () => {
    // s3rver does not check the payload hash; S3 rejects a request whose hash is not its body's.
    // A loopback server records, per PUT, the hash the request was signed with and the body's.
    const seen: Array<{ signed: unknown; body: string }> = [];
    const server = createServer((request, response) => {
      const hash = createHash('sha256');
      request.on('data', (chunk: Buffer) => hash.update(chunk));
      request.on('end', () => {
        seen.push({ signed: request.headers['x-amz-content-sha256'], body: hash.digest('hex') });
        response.setHeader('ETag', '"etag"');
        response.end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const recorder = createStorage({ ...h.config, S3_ENDPOINT: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
    try {
      const chain = createUploadChain(recorder, log);
      chain.add(Readable.from([Buffer.from('first '), Buffer.from('file')]), file('a.txt'));
      chain.add(Readable.from([Buffer.alloc(100_000, 7)]), file('b.bin'));
      chain.add(Readable.from([Buffer.from('')]), file('named-empty.txt'));
      const files = await chain.settle();
      expect(seen).toEqual(files.map((stored) => ({ signed: stored.sha256, body: stored.sha256 })));
      expect(files.map((stored) => stored.sha256)).toEqual([
        sha256('first file'),
        createHash('sha256').update(Buffer.alloc(100_000, 7)).digest('hex'),
        sha256(''),
      ]);
    } finally {
      recorder.close();
      server.close();
    }
  });

  it('stores a small file under a key with special characters, as an attachment of a passive type', async () => {
    const key = "sig/dir/a b+c(1)&ü*~'=%.txt";
    await h.storage.upload(key, Readable.from([Buffer.from('special '), Buffer.from('key')]), 'text/html', () => sha256('special key'));
    expect(await listObjectKeys(h.storage)).toContain(key);
    expect(await download(key)).toBe('special key');
    const head = await h.storage.client.send(new HeadObjectCommand({ Bucket: h.storage.bucket, Key: key }));
    expect(head).toMatchObject({ ContentType: 'application/octet-stream', ContentDisposition: 'attachment', ContentLength: 11 });
  });

  it('sends a file that ends within its first part through the S3 client (its middleware stack, retries and settings apply)', async () => {
    const commands: string[] = [];
    h.storage.client.middlewareStack.add(
      (next, context) => (args) => {
        commands.push(context.commandName ?? '');
        return next(args);
      },
      { step: 'initialize', name: 'testRecordCommands' },
    );
    try {
      await h.storage.upload(`sdk-path-${(n += 1)}`, Readable.from([Buffer.alloc(100_000, 1)]), 'application/octet-stream');
      expect(commands).toEqual(['PutObjectCommand']);
    } finally {
      h.storage.client.middlewareStack.remove('testRecordCommands');
    }
  });

  it('rejects settle with the storage error when an upload fails', async () => {
    const missingBucket = createStorage({ ...h.config, S3_BUCKET: 'no-such-bucket-here' });
    try {
      const chain = createUploadChain(missingBucket, log);
      chain.add(Readable.from([Buffer.from('data')]), file('lost.txt'));
      await expect(chain.settle()).rejects.toThrow();
    } finally {
      missingBucket.close();
    }
  });
});
