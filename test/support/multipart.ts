// Hand-built multipart/form-data bodies and a raw HTTP client for them. The client writes the body in
// chunks and stops writing as soon as an answer arrives: the API answers a body that crossed a limit
// early and closes the connection, which `fetch` reports as a network error instead of the answer.
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import { jsonOrUndefined } from './http.ts';

export type FieldPart = { name: string; value: string };
export type FilePart = {
  name: string;
  /** Sent as filename="…", as is (UTF-8); undefined sends no filename parameter. */
  filename?: string;
  /** Sent as filename*=utf-8''… (RFC 5987, percent-encoded), which can carry CR, LF and quotes. */
  filenameStar?: string;
  data: Buffer;
  contentType?: string;
};
export type Part = FieldPart | FilePart;

export type MultipartBody = { body: Buffer; contentType: string; boundary: string };

const CRLF = '\r\n';

function encodeRfc5987(value: string): string {
  return Array.from(Buffer.from(value, 'utf8'))
    .map((byte) => (/[A-Za-z0-9._~-]/.test(String.fromCharCode(byte)) ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`))
    .join('');
}

/** The body of `parts`; `closed: false` leaves out the closing boundary (a truncated body). */
export function multipartBody(parts: Part[], options: { closed?: boolean } = {}): MultipartBody {
  const boundary = `----cfs-test-${randomBytes(12).toString('hex')}`;
  const chunks: Buffer[] = [];
  for (const part of parts) {
    let disposition = `form-data; name="${part.name}"`;
    const headers: string[] = [];
    if ('data' in part) {
      if (part.filename !== undefined) disposition += `; filename="${part.filename}"`;
      if (part.filenameStar !== undefined) disposition += `; filename*=utf-8''${encodeRfc5987(part.filenameStar)}`;
      headers.push(`Content-Disposition: ${disposition}`, `Content-Type: ${part.contentType ?? 'application/octet-stream'}`);
    } else {
      headers.push(`Content-Disposition: ${disposition}`);
    }
    chunks.push(Buffer.from(`--${boundary}${CRLF}${headers.join(CRLF)}${CRLF}${CRLF}`, 'utf8'));
    chunks.push('data' in part ? part.data : Buffer.from(part.value, 'utf8'));
    chunks.push(Buffer.from(CRLF));
  }
  if (options.closed !== false) chunks.push(Buffer.from(`--${boundary}--${CRLF}`));
  return { body: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}`, boundary };
}

export type RawResponse = {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  json: any;
  /** Whether the whole body was written before the answer came. */
  bodyWritten: boolean;
};

const CHUNK = 64 * 1024;

export type PostOptions = {
  timeoutMs?: number;
  /** Stops writing after this many bytes of the body until `whilePaused` resolves. */
  pauseAfter?: number;
  whilePaused?: () => Promise<void>;
};

/**
 * POSTs `body` on a fresh connection and resolves with the answer, also when the server answers
 * before reading the whole body and closes the connection. Fails after `timeoutMs`.
 */
export function postRaw(url: string, body: Buffer, headers: Record<string, string>, options: PostOptions = {}): Promise<RawResponse> {
  const { timeoutMs = 20_000, pauseAfter, whilePaused } = options;
  return new Promise((resolve, reject) => {
    let settled = false;
    let responded = false;
    let offset = 0;
    let paused = false;
    const req = http.request(url, {
      method: 'POST',
      agent: false,
      headers: { accept: 'application/json', 'content-length': String(body.length), ...headers },
    });
    const finish = (error: Error | undefined, result?: RawResponse) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.destroy();
      if (error) reject(error);
      else resolve(result!);
    };
    const timer = setTimeout(() => finish(new Error(`no answer from ${url} within ${timeoutMs} ms (wrote ${offset} of ${body.length} bytes)`)), timeoutMs);

    req.on('error', (error: NodeJS.ErrnoException) => {
      // A write that fails because the server answered and closed is expected; the answer decides.
      if (responded) return;
      finish(new Error(`request failed before any answer (wrote ${offset} of ${body.length} bytes): ${error.code ?? error.message}`));
    });
    req.on('response', (res) => {
      responded = true;
      const chunks: Buffer[] = [];
      const done = () => {
        const text = Buffer.concat(chunks).toString('utf8');
        finish(undefined, { status: res.statusCode ?? 0, headers: res.headers, text, json: jsonOrUndefined(text), bodyWritten: offset >= body.length });
      };
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', done);
      // The connection may be reset once the answer is in: keep what arrived.
      res.on('error', done);
      res.on('aborted', done);
    });

    const pump = () => {
      while (offset < body.length) {
        if (settled || responded) return;
        if (pauseAfter !== undefined && whilePaused && !paused && offset >= pauseAfter) {
          paused = true;
          whilePaused().then(pump, (error: unknown) => finish(error instanceof Error ? error : new Error(String(error))));
          return;
        }
        const end = pauseAfter !== undefined && !paused && offset < pauseAfter ? Math.min(pauseAfter, offset + CHUNK) : offset + CHUNK;
        const chunk = body.subarray(offset, end);
        offset += chunk.length;
        if (!req.write(chunk)) {
          req.once('drain', pump);
          return;
        }
      }
      if (!settled && !responded) req.end();
    };
    pump();
  });
}

/**
 * Starts a POST that announces `contentLength` bytes, writes `prefix` only, waits for `beforeAbort`,
 * then drops the connection: a client that goes away in the middle of its body.
 */
export async function postAndAbort(
  url: string,
  headers: Record<string, string>,
  prefix: Buffer,
  contentLength: number,
  beforeAbort: () => Promise<void>,
): Promise<void> {
  const target = new URL(url);
  const socket = net.connect(Number(target.port), target.hostname);
  socket.on('error', () => undefined);
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  const head = [
    `POST ${target.pathname}${target.search} HTTP/1.1`,
    `Host: ${target.host}`,
    'Accept: application/json',
    `Content-Length: ${contentLength}`,
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
    '',
    '',
  ].join(CRLF);
  socket.write(head);
  socket.write(prefix);
  try {
    await beforeAbort();
  } finally {
    socket.destroy();
  }
}
