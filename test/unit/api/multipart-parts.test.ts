// The parts readMultipart is built from that need no storage, each on its own: the limits counter
// and the close-delimiter cut. The upload chain is checked against real S3 storage in
// test/api/multipart-parts.test.ts; the busboy wiring through HTTP in submission-files,
// field-limits, slow-clients and fuzz tests.
import { Readable } from 'node:stream';
import { text } from 'node:stream/consumers';
import { describe, expect, it } from 'vitest';
import { cutAtCloseDelimiter, boundaryOf } from '../../../src/api/submissions/close-delimiter.ts';
import { createMultipartLimits, FIELD_BYTES, FILE_LIMITS } from '../../../src/api/submissions/multipart-limits.ts';

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
