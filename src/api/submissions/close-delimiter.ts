// Passes a multipart body up to its close delimiter (`--boundary--`) and drops the rest. Busboy
// keeps parsing parts that follow the delimiter in the same chunk and then waits forever for
// their end; per RFC 2046 what follows the delimiter is an epilogue to ignore anyway.
import { Transform } from 'node:stream';

export function cutAtCloseDelimiter(boundary: string): Transform {
  const atStart = Buffer.from(`--${boundary}--`);
  const inBody = Buffer.from(`\r\n--${boundary}--`);
  let carry = Buffer.alloc(0);
  let first = true;
  let closed = false;
  return new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      if (closed) return callback();
      const data = carry.length ? Buffer.concat([carry, chunk]) : chunk;
      const at = first && data.subarray(0, atStart.length).equals(atStart) ? 0 : data.indexOf(inBody);
      if (data.length >= atStart.length) first = false;
      if (at >= 0) {
        closed = true;
        const end = at + (at === 0 && data[0] === 45 ? atStart.length : inBody.length);
        carry = Buffer.alloc(0);
        return callback(null, data.subarray(0, end));
      }
      // Keep the last bytes: a delimiter may straddle two chunks.
      const keep = Math.min(data.length, inBody.length - 1);
      carry = Buffer.from(data.subarray(data.length - keep));
      callback(null, data.subarray(0, data.length - keep));
    },
    flush(callback) {
      callback(null, closed ? undefined : carry);
    },
  });
}

/** The boundary named in a multipart Content-Type, if any. */
export function boundaryOf(contentType: string | undefined): string | undefined {
  const match = /boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType ?? '');
  return match ? (match[1] ?? match[2] ?? '') : undefined;
}
