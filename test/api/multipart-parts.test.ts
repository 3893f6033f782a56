// The parts readMultipart is built from, each on its own: the limits counter, the close-delimiter
// cut, and the sequential upload chain against the harness's real S3 storage. The busboy wiring
// is exercised through HTTP in submission-files, field-limits, slow-clients and fuzz tests.
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough, Readable } from 'node:stream';
import { text } from 'node:stream/consumers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/shared/infra/log.ts';
import { HeadObjectCommand } from '@aws-sdk/client-s3';
import { createStorage } from '../../src/shared/infra/storage.ts';
import { cutAtCloseDelimiter, boundaryOf } from '../../src/api/submissions/close-delimiter.ts';
import { createMultipartLimits, FIELD_BYTES, FILE_LIMITS } from '../../src/api/submissions/multipart-limits.ts';
import { createUploadChain, type ChainedFile } from '../../src/api/submissions/upload-chain.ts';
import { listObjectKeys, startHarness, type Harness } from '../support/harness.ts';

const log = createLogger('test', 'silent');
const sha256 = (data: string) => createHash('sha256').update(data).digest('hex');
const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('multipart limits counter', () => {
  it('counts files up to the limit and refuses the next one', () => {
    const limits = createMultipartLimits();
    for (let i = 0; i < FILE_LIMITS.files; i += 1) expect(limits.file()).toBeUndefined();
    expect(limits.file()).toMatchObject({ status: 400, id: 'too_many_files' });
  });

  it('adds up field names and values against one bound', () => {
    const limits = createMultipartLimits();
    const half = 'x'.repeat(FIELD_BYTES / 2 - 1);
    expect(limits.field('a', half, { name: false, value: false })).toBeUndefined();
    expect(limits.field('b', half, { name: false, value: false })).toBeUndefined();
    expect(limits.field('cd', 'e', { name: false, value: false })).toMatchObject({ status: 413 });
  });

  it('refuses a truncated value, a truncated name and a long file field name', () => {
    expect(createMultipartLimits().field('a', 'b', { name: false, value: true })).toMatchObject({ status: 413 });
    expect(createMultipartLimits().field('a', 'b', { name: true, value: false })).toMatchObject({ status: 400 });
    expect(createMultipartLimits().fileFieldName('n'.repeat(100))).toBeUndefined();
    expect(createMultipartLimits().fileFieldName('n'.repeat(1000))).toMatchObject({ status: 400 });
  });
});

describe('close delimiter cut', () => {
  const through = (boundary: string, chunks: string[]) => text(Readable.from(chunks.map((c) => Buffer.from(c))).pipe(cutAtCloseDelimiter(boundary)));

  it('drops what follows the close delimiter, also when the delimiter straddles two chunks', async () => {
    const body = '--b\r\nx\r\n--b--\r\n--b\r\nepilogue';
    for (let at = 1; at < body.length; at += 1) {
      expect(await through('b', [body.slice(0, at), body.slice(at)])).toBe('--b\r\nx\r\n--b--');
    }
  });

  it('cuts at the same place whatever the chunk sizes, with chunks longer than the delimiter', async () => {
    const boundary = 'cfs-boundary';
    const part = `--${boundary}\r\nContent-Disposition: form-data; name="a"\r\n\r\n${'v'.repeat(300)}\r\n`;
    const kept = `${part}${part}--${boundary}--`;
    const body = `${kept}\r\n--${boundary}\r\nepilogue ${'e'.repeat(100)}`;
    for (const size of [1, 5, 17, 18, 19, 31, 64, 100, 333, 640, body.length]) {
      for (let offset = 0; offset < Math.min(size, 40); offset += 3) {
        const chunks = [body.slice(0, offset)];
        for (let at = offset; at < body.length; at += size) chunks.push(body.slice(at, at + size));
        expect(
          await through(
            boundary,
            chunks.filter((chunk) => chunk.length > 0),
          ),
        ).toBe(kept);
      }
    }
    expect(await through(boundary, [part.repeat(3), part.repeat(2)])).toBe(part.repeat(5));
  });

  it('passes a body without a close delimiter through whole', async () => {
    expect(await through('b', ['--b\r\nabc', 'def'])).toBe('--b\r\nabcdef');
  });

  it('reads the boundary, quoted or not', () => {
    expect(boundaryOf('multipart/form-data; boundary=abc')).toBe('abc');
    expect(boundaryOf('multipart/form-data; boundary="a b"')).toBe('a b');
    expect(boundaryOf('multipart/form-data')).toBeUndefined();
  });
});

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
