// RFC 8058 one-click unsubscribe: a mail client POSTs `List-Unsubscribe=One-Click` to the message's
// List-Unsubscribe link, urlencoded or (as the RFC prefers) multipart/form-data. This reads the
// multipart form of it: a few small fields, no files; anything else is not a one-click request.
import busboy from 'busboy';
import type { AppContext } from '../context.ts';

const LIMITS = { fields: 5, fieldSize: 256, fieldNameSize: 64, files: 0, parts: 5 };
/** A one-click body is about 150 bytes: past this, reading stops and the answer is a refusal. */
const MAX_BYTES = 4096;

/** Whether a multipart body carries the field `List-Unsubscribe` with the value `One-Click`. */
export function isMultipartOneClick(ctx: AppContext): Promise<boolean> {
  return new Promise((resolve) => {
    let found = false;
    let parser: busboy.Busboy;
    try {
      parser = busboy({ headers: ctx.req.headers, limits: LIMITS });
    } catch {
      resolve(false); // no or a malformed boundary
      return;
    }
    parser.on('field', (name, value) => {
      if (name === 'List-Unsubscribe' && value.trim() === 'One-Click') found = true;
    });
    parser.on('file', (_name, stream) => stream.resume());
    parser.on('close', () => resolve(found));
    parser.on('error', () => resolve(false));
    let bytes = 0;
    const counter = (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes <= MAX_BYTES) return;
      ctx.req.off('data', counter);
      ctx.req.unpipe(parser);
      parser.destroy();
      resolve(false);
    };
    ctx.req.on('data', counter);
    ctx.req.pipe(parser);
  });
}
