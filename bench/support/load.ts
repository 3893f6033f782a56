// The load generator: N closed-loop keep-alive clients, each on one connection from its own
// loopback source address (127.1.x.y), so the per-IP rate limit sees N visitors.

// Bounded by time (warm-up, then the measured window) and by a request count, whichever comes first.
import { randomBytes } from 'node:crypto';
import http from 'node:http';

export type RequestSpec = {
  path: string;
  contentType: string;
  body: Buffer;
  /** A body of its own for each request (the `slot`-th sent by this load), where one may not be sent twice. */
  bodyFor?: (slot: number) => Buffer;
};

export type LoadOptions = {
  url: string;
  clients: number;
  warmupMs: number;
  durationMs: number;
  maxRequests: number;
  request: RequestSpec;
  /** Paces the clients to at most this many requests per second in all (open loop); unset: as fast as answered. */
  maxRps?: number;
  /** Each 200 answered inside the measured window, with the time its body arrived (epoch ms). */
  onMeasured?: (body: string, at: number) => void;
  /** Each 200 answered, warm-up included. */
  onOk?: (body: string) => void;
};

export type LoadResult = {
  /** Requests completed inside the measured window (any status). */
  completed: number;
  ok: number;
  /** Non-200 answers and network errors, over the whole run. */
  errors: number;
  firstError: string | undefined;
  seconds: number;
  rps: number;
  p50: number;
  p99: number;
  /** Latencies of the requests completed in the measured window, sorted, in ms. */
  latencies: number[];
};

/** The source address of client `index`: 127.1.0.1, 127.1.0.2, … (all of 127/8 is loopback on Linux). */
export const clientAddress = (index: number) => `127.1.${Math.floor(index / 250)}.${(index % 250) + 1}`;

export const now = () => performance.timeOrigin + performance.now();

export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const target = new URL(options.url);
  const start = performance.now();
  const measureStart = start + options.warmupMs;
  const end = measureStart + options.durationMs;
  const latencies: number[] = [];
  let dispatched = 0;
  let ok = 0;
  let errors = 0;
  let firstError: string | undefined;

  const client = async (index: number) => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1, localAddress: clientAddress(index) });
    try {
      while (performance.now() < end && dispatched < options.maxRequests) {
        const slot = dispatched;
        dispatched += 1;
        if (options.maxRps) {
          const due = start + (slot * 1000) / options.maxRps;
          const wait = due - performance.now();
          if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
          if (performance.now() >= end) break;
        }
        const sent = performance.now();
        let outcome: { status: number; body: string };
        try {
          const { request } = options;
          outcome = await post(agent, target, request.bodyFor ? { ...request, body: request.bodyFor(slot) } : request);
        } catch (error) {
          outcome = { status: 0, body: String(error) };
        }
        const done = performance.now();
        if (outcome.status === 200) options.onOk?.(outcome.body);
        else {
          errors += 1;
          firstError ??= `${outcome.status} ${outcome.body.slice(0, 200)}`;
          if (outcome.status === 0) await new Promise((resolve) => setTimeout(resolve, 50));
        }
        if (done >= measureStart && done <= end) {
          latencies.push(done - sent);
          if (outcome.status === 200) {
            ok += 1;
            options.onMeasured?.(outcome.body, performance.timeOrigin + done);
          }
        }
      }
    } finally {
      agent.destroy();
    }
  };
  await Promise.all(Array.from({ length: options.clients }, (_, index) => client(index)));
  const seconds = (Math.min(performance.now(), end) - measureStart) / 1000;
  latencies.sort((a, b) => a - b);
  return {
    completed: latencies.length,
    ok,
    errors,
    firstError,
    seconds,
    rps: ok / seconds,
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    latencies,
  };
}

export function percentile(sorted: number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

function post(agent: http.Agent, target: URL, spec: RequestSpec): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      {
        agent,
        host: target.hostname,
        port: target.port,
        method: 'POST',
        path: spec.path,
        headers: { 'content-type': spec.contentType, 'content-length': spec.body.length, accept: 'application/json' },
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
        response.on('error', reject);
      },
    );
    request.setTimeout(30_000, () => request.destroy(new Error('request timed out')));
    request.on('error', reject);
    request.end(spec.body);
  });
}

// ---------------------------------------------------------------- bodies

export type Field = { name: string; value: string };
export type FileSpec = { name: string; filename: string; contentType: string; size: number };

/** A multipart/form-data body built once: the fields, then the files (random bytes). */
export function multipartRequest(path: string, fields: Field[], files: FileSpec[]): RequestSpec {
  const boundary = `----cfs-bench-${randomBytes(8).toString('hex')}`;
  const chunks: Buffer[] = [];
  for (const field of fields) {
    chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${field.name}"\r\n\r\n${field.value}\r\n`));
  }
  for (const file of files) {
    chunks.push(filePartHead(boundary, file), randomBytes(file.size), Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { path, contentType: `multipart/form-data; boundary=${boundary}`, body: Buffer.concat(chunks) };
}

function filePartHead(boundary: string, file: FileSpec): Buffer {
  return Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="${file.name}"; filename="${file.filename}"\r\nContent-Type: ${file.contentType}\r\n\r\n`,
  );
}

export type UploadResult = { ok: number; errors: number; firstError: string | undefined; seconds: number };

/**
 * `clients` uploads at once, each one request with `files` files of `fileBytes` bytes, written with
 * backpressure from one shared buffer so that the generator itself holds no more than that buffer.
 */
export async function uploadAtOnce(url: string, path: string, fields: Field[], clients: number, files: number, fileBytes: number): Promise<UploadResult> {
  const target = new URL(url);
  const data = randomBytes(fileBytes);
  const started = performance.now();
  let ok = 0;
  let errors = 0;
  let firstError: string | undefined;
  const one = (index: number) =>
    new Promise<void>((resolve) => {
      const boundary = `----cfs-bench-${randomBytes(8).toString('hex')}`;
      const head = Buffer.concat(
        fields.map((field) => Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${field.name}"\r\n\r\n${field.value}\r\n`)),
      );
      const parts = Array.from({ length: files }, (_, n) =>
        filePartHead(boundary, { name: 'file', filename: `big-${n + 1}.bin`, contentType: 'application/octet-stream', size: fileBytes }),
      );
      const tail = Buffer.from(`--${boundary}--\r\n`);
      const length = head.length + parts.reduce((sum, part) => sum + part.length + fileBytes + 2, 0) + tail.length;
      const request = http.request(
        {
          host: target.hostname,
          port: target.port,
          method: 'POST',
          path,
          agent: false,
          localAddress: clientAddress(index),
          headers: { 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': length, accept: 'application/json' },
        },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () => {
            if (response.statusCode === 200) ok += 1;
            else {
              errors += 1;
              firstError ??= `${response.statusCode} ${Buffer.concat(chunks).toString().slice(0, 200)}`;
            }
            resolve();
          });
        },
      );
      request.setTimeout(300_000, () => request.destroy(new Error('upload timed out')));
      request.on('error', (error) => {
        errors += 1;
        firstError ??= String(error);
        resolve();
      });
      void (async () => {
        const write = (chunk: Buffer) => (request.write(chunk) ? Promise.resolve() : new Promise<void>((done) => request.once('drain', done)));
        await write(head);
        for (const part of parts) {
          await write(part);
          // Sixteen 1/16 slices per file, so backpressure bites well before a whole file is queued.
          const slice = Math.ceil(fileBytes / 16);
          for (let offset = 0; offset < fileBytes; offset += slice) await write(data.subarray(offset, Math.min(fileBytes, offset + slice)));
          await write(Buffer.from('\r\n'));
        }
        request.end(tail);
      })().catch(() => undefined);
    });
  await Promise.all(Array.from({ length: clients }, (_, index) => one(index)));
  return { ok, errors, firstError, seconds: (performance.now() - started) / 1000 };
}
