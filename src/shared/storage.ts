// S3-compatible object storage: MinIO locally, S3 in production, s3rver in the tests.
import { createHash } from 'node:crypto';
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { Readable } from 'node:stream';
import {
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadBucketCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { SignatureV4 } from '@smithy/signature-v4';
import type { Config } from './config.ts';

export type Storage = {
  client: S3Client;
  bucket: string;
  /**
   * Streams a body into the bucket, holding at most one 5 MB part of it in memory. `payloadSha256`,
   * when given, returns the body's SHA-256 (hex) once the body has ended (undefined before): a
   * file sent as one PUT is then signed with it instead of being hashed a second time.
   */
  upload: (key: string, body: Readable, contentType: string, payloadSha256?: () => string | undefined) => Promise<void>;
  download: (key: string) => Promise<Readable>;
  /**
   * A time-limited GET URL for the object, signed for S3_PUBLIC_ENDPOINT when that is set. It
   * serves the file as a download (`attachment`) with `servedContentType(contentType)`.
   */
  presign: (key: string, filename: string, ttlSeconds: number, contentType: string) => Promise<string>;
  remove: (keys: string[]) => Promise<void>;
  /** Resolves when the bucket answers; used by the readiness check. */
  ping: () => Promise<void>;
  close: () => void;
};

type StorageConfig = Pick<
  Config,
  | 'S3_ENDPOINT'
  | 'S3_PUBLIC_ENDPOINT'
  | 'S3_REGION'
  | 'S3_BUCKET'
  | 'S3_ACCESS_KEY_ID'
  | 'S3_SECRET_ACCESS_KEY'
  | 'S3_FORCE_PATH_STYLE'
>;

/**
 * `maxConcurrentUploads` bounds the uploads past their first 256 KB in flight in this process: each
 * holds a 5 MB part in memory, and an upload waiting for a slot does not read its body, so the
 * client is paced by TCP. A file's first 256 KB are read under one of 32 slots of their own; a
 * file that ends there never takes one of the 5 MB slots. Without S3_ENDPOINT every file takes one.
 */
export function createStorage(config: StorageConfig, options: { maxConcurrentUploads?: number } = {}): Storage {
  const client = s3Client(config, config.S3_ENDPOINT);
  const uploadSlots = new Semaphore(options.maxConcurrentUploads ?? Infinity);
  // Links in emails must work from the recipient's machine: sign them for the public address.
  const publicClient = config.S3_PUBLIC_ENDPOINT ? s3Client(config, config.S3_PUBLIC_ENDPOINT) : client;
  const bucket = config.S3_BUCKET;
  const putWhole = config.S3_ENDPOINT ? signedPut(client, config, config.S3_ENDPOINT) : undefined;
  // The first SMALL_FILE_BYTES of a file are read under a slot of their own: a form's usual files
  // end there and are stored without waiting for (or holding) one of the few 5 MB slots.
  const smallSlots = new Semaphore(SMALL_UPLOAD_SLOTS);

  return {
    client,
    bucket,
    async upload(key, body, contentType, payloadSha256) {
      // Stored as a download of a passive type: a client-declared text/html or SVG must never
      // render, with scripts, on the storage's origin.
      const headers = { contentType: servedContentType(contentType), contentDisposition: 'attachment' };
      const multipart = (data: Readable) =>
        new Upload({
          client,
          params: { Bucket: bucket, Key: key, Body: data, ContentType: headers.contentType, ContentDisposition: headers.contentDisposition },
          partSize: PART_BYTES,
          queueSize: 2,
          leavePartsOnError: false,
        }).done();
      if (!putWhole) {
        await uploadSlots.acquire();
        try {
          await multipart(body);
        } finally {
          uploadSlots.release();
        }
        return;
      }
      // A body that ends within the first part is one PUT of known length, sent without the SDK
      // (see signedPut); a longer one goes to lib-storage, the bytes already read first.
      const head: Head = { chunks: [], bytes: 0, ended: false };
      await smallSlots.acquire();
      let held = smallSlots;
      try {
        await readInto(head, body, SMALL_FILE_BYTES);
        if (!head.ended) {
          await uploadSlots.acquire();
          smallSlots.release();
          held = uploadSlots;
          await readInto(head, body, PART_BYTES);
        }
        if (head.ended) {
          await putWhole(bucket, key, head.chunks.length === 1 ? head.chunks[0]! : Buffer.concat(head.chunks), headers, payloadSha256?.());
        } else {
          await multipart(Readable.from(replay(head.chunks, body)));
        }
      } finally {
        held.release();
      }
    },
    async download(key) {
      const result = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
      if (!(result.Body instanceof Readable)) throw new Error(`object ${key} has no readable body`);
      return result.Body;
    },
    presign(key, filename, ttlSeconds, contentType) {
      const disposition = `attachment; filename*=UTF-8''${encodeURIComponent(filename)}`;
      // The response headers are part of the signature: objects stored before the upload forced a
      // passive type are served safely too.
      return getSignedUrl(
        publicClient,
        new GetObjectCommand({
          Bucket: bucket,
          Key: key,
          ResponseContentDisposition: disposition,
          ResponseContentType: servedContentType(contentType),
        }),
        { expiresIn: ttlSeconds },
      );
    },
    async remove(keys) {
      for (let start = 0; start < keys.length; start += 1000) {
        const batch = keys.slice(start, start + 1000);
        await client.send(
          new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true } }),
        );
      }
    },
    async ping() {
      await client.send(new HeadBucketCommand({ Bucket: bucket }));
    },
    close() {
      client.destroy();
      if (publicClient !== client) publicClient.destroy();
    },
  };
}

/**
 * Types a browser shows without running anything: these keep their declared type (so a photo or
 * a PDF still opens in its viewer once downloaded); everything else (HTML, SVG, XML, JavaScript,
 * unknown types) is served as application/octet-stream.
 */
const PASSIVE_TYPES = /^(?:image\/(?:png|jpeg|gif|webp|avif|bmp|heic|heif)|application\/(?:pdf|zip|octet-stream)|text\/(?:plain|csv)|audio\/[a-z0-9.+-]+|video\/[a-z0-9.+-]+)$/;

export const servedContentType = (declared: string) =>
  PASSIVE_TYPES.test(declared.trim().toLowerCase()) ? declared.trim().toLowerCase() : 'application/octet-stream';

/** At most `limit` holders at once; the others wait in arrival order. */
class Semaphore {
  private active = 0;
  private readonly waiting: Array<() => void> = [];
  private readonly limit: number;
  constructor(limit: number) {
    this.limit = limit;
  }
  async acquire(): Promise<void> {
    if (this.active < this.limit) {
      this.active += 1;
      return;
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }
  release(): void {
    const next = this.waiting.shift();
    if (next) next(); // the slot passes straight to the next holder
    else this.active -= 1;
  }
}

/** lib-storage's part size (its minimum): what one upload holds in memory at most. */
const PART_BYTES = 5 * 1024 * 1024;

/** A file's first bytes at most: its first 256 KB under one of 32 small slots (8 MB in all per process). */
const SMALL_FILE_BYTES = 256 * 1024;
const SMALL_UPLOAD_SLOTS = 32;

type Head = { chunks: Buffer[]; bytes: number; ended: boolean };

/** Reads `body` into `head` until it ends (`ended`) or `limit` bytes in all have come. */
async function readInto(head: Head, body: Readable, limit: number): Promise<void> {
  if (head.bytes >= limit) return;
  for await (const chunk of body.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
    head.chunks.push(chunk);
    head.bytes += chunk.length;
    if (head.bytes >= limit) return;
  }
  head.ended = true;
}

/** The chunks already read (let go as they are handed on), then the rest of the body. */
async function* replay(chunks: Buffer[], rest: Readable): AsyncGenerator<Buffer> {
  for (let chunk = chunks.shift(); chunk; chunk = chunks.shift()) yield chunk;
  yield* rest as AsyncIterable<Buffer>;
}

type PutHeaders = { contentType: string; contentDisposition: string };

/**
 * One PutObject of a body in memory: signed with the SDK's own SigV4 signer (the client's
 * credentials, region and hash), sent over a keep-alive agent. The SDK's middleware stack costs
 * about 0.8 ms of CPU per object in this process against 0.2 ms for this (npm run bench, scenario
 * 2: three files per request). Only for an explicit S3_ENDPOINT (path-style or virtual-host).
 * Retried like the SDK's standard mode: 3 attempts, on a network error, 429 or 5xx.
 */
function signedPut(client: S3Client, config: StorageConfig, endpoint: string) {
  const base = new URL(endpoint);
  const secure = base.protocol === 'https:';
  const agent = secure ? new HttpsAgent({ keepAlive: true, maxSockets: 50 }) : new HttpAgent({ keepAlive: true, maxSockets: 50 });
  const send = secure ? httpsRequest : httpRequest;
  const signer = new SignatureV4({
    credentials: client.config.credentials,
    region: config.S3_REGION,
    service: 's3',
    sha256: client.config.sha256,
    uriEscapePath: false,
    applyChecksum: false,
  });
  const basePath = base.pathname.replace(/\/+$/, '');

  async function attempt(bucket: string, key: string, data: Buffer, headers: PutHeaders, sha256: string): Promise<void> {
    const hostname = config.S3_FORCE_PATH_STYLE ? base.hostname : `${bucket}.${base.hostname}`;
    const host = base.port ? `${hostname}:${base.port}` : hostname;
    const objectPath = `${basePath}${config.S3_FORCE_PATH_STYLE ? `/${encodeKey(bucket)}` : ''}/${encodeKey(key)}`;
    const signed = await signer.sign({
      method: 'PUT',
      protocol: base.protocol,
      hostname,
      port: base.port ? Number(base.port) : undefined,
      path: objectPath,
      query: {},
      headers: {
        host,
        'content-type': headers.contentType,
        'content-disposition': headers.contentDisposition,
        'content-length': String(data.length),
        'x-amz-content-sha256': sha256,
      },
    });
    const response = await new Promise<IncomingMessage>((resolve, reject) => {
      const req = send({ agent, hostname: base.hostname, port: base.port || undefined, method: 'PUT', path: objectPath, headers: signed.headers }, resolve);
      req.on('error', reject);
      req.end(data);
    });
    const status = response.statusCode ?? 0;
    if (status >= 200 && status < 300) {
      response.resume();
      return;
    }
    const detail = (await response.toArray()).map(String).join('').slice(0, 500);
    throw Object.assign(new Error(`PutObject ${key}: HTTP ${status} ${detail}`), { status });
  }

  return async (bucket: string, key: string, data: Buffer, headers: PutHeaders, sha256?: string): Promise<void> => {
    const hash = sha256 ?? createHash('sha256').update(data).digest('hex');
    for (let tries = 1; ; tries += 1) {
      try {
        return await attempt(bucket, key, data, headers, hash);
      } catch (error) {
        const status = (error as { status?: number }).status;
        const retryable = status === undefined || status === 429 || status >= 500;
        if (!retryable || tries >= 3) throw error;
        await new Promise((resolve) => setTimeout(resolve, 100 * 2 ** (tries - 1)));
      }
    }
  };
}

/** An object key or bucket in a URL path: each segment percent-encoded as S3 expects (RFC 3986). */
const encodeKey = (key: string) =>
  key
    .split('/')
    .map((segment) => encodeURIComponent(segment).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`))
    .join('/');

function s3Client(config: StorageConfig, endpoint: string | undefined): S3Client {
  return new S3Client({
    region: config.S3_REGION,
    ...(endpoint ? { endpoint } : {}),
    forcePathStyle: config.S3_FORCE_PATH_STYLE,
    ...(config.S3_ACCESS_KEY_ID && config.S3_SECRET_ACCESS_KEY
      ? { credentials: { accessKeyId: config.S3_ACCESS_KEY_ID, secretAccessKey: config.S3_SECRET_ACCESS_KEY } }
      : {}),
    // Non-AWS servers (MinIO, s3rver) mishandle the aws-chunked checksum framing on streamed bodies.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
}
