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
      // Large chunks are not copied (carry + chunk): the bytes that could hold a delimiter
      // straddling the two are searched on their own, then the chunk itself.
      if (first || chunk.length < inBody.length) return callback(null, small(chunk));
      const head = Buffer.concat([carry, chunk.subarray(0, inBody.length - 1)]);
      const inHead = head.indexOf(inBody);
      const inChunk = inHead >= 0 ? -1 : chunk.indexOf(inBody);
      const before = carry;
      if (inHead >= 0 || inChunk >= 0) {
        closed = true;
        carry = Buffer.alloc(0);
        const end = (inHead >= 0 ? inHead : before.length + inChunk) + inBody.length;
        if (end <= before.length) return callback(null, before.subarray(0, end));
        if (before.length) this.push(before);
        return callback(null, chunk.subarray(0, end - before.length));
      }
      // Keep the last bytes: a delimiter may straddle this chunk and the next.
      carry = Buffer.from(chunk.subarray(chunk.length - (inBody.length - 1)));
      if (before.length) this.push(before);
      callback(null, chunk.subarray(0, chunk.length - carry.length));
    },
    flush(callback) {
      callback(null, closed ? undefined : carry);
    },
  });

  /** The whole search on carry + chunk: for the body's first bytes and for small chunks. */
  function small(chunk: Buffer): Buffer | undefined {
    const data = carry.length ? Buffer.concat([carry, chunk]) : chunk;
    const at = first && data.subarray(0, atStart.length).equals(atStart) ? 0 : data.indexOf(inBody);
    if (data.length >= atStart.length) first = false;
    if (at >= 0) {
      closed = true;
      const end = at + (at === 0 && data[0] === 45 ? atStart.length : inBody.length);
      carry = Buffer.alloc(0);
      return data.subarray(0, end);
    }
    // Keep the last bytes: a delimiter may straddle two chunks.
    const keep = Math.min(data.length, inBody.length - 1);
    carry = Buffer.from(data.subarray(data.length - keep));
    return data.subarray(0, data.length - keep);
  }
}

/** The boundary named in a multipart Content-Type, if any. */
export function boundaryOf(contentType: string | undefined): string | undefined {
  const match = /boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType ?? '');
  return match ? (match[1] ?? match[2] ?? '') : undefined;
}
