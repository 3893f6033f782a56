// S3-compatible object storage: MinIO locally, S3 in production, s3rver in the tests.
import { Readable } from 'node:stream';
import {
  CopyObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadBucketCommand,
  PutObjectCommand,
  S3Client,
  type PutObjectCommandInput,
  type PutObjectCommandOutput,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import type { BuildMiddleware } from '@aws-sdk/types';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { Config } from './config.ts';
import { uploadsWaiting } from './metrics.ts';

export type Storage = {
  client: S3Client;
  bucket: string;
  /**
   * Streams a body into the bucket, holding at most one 5 MB part of it in memory. `payloadSha256`,
   * when given, returns the body's SHA-256 (hex) once the body has ended (undefined before): a
   * file sent as one PutObject is then signed with it instead of being hashed a second time.
   */
  upload: (key: string, body: Readable, contentType: string, payloadSha256?: () => string | undefined) => Promise<void>;
  download: (key: string) => Promise<Readable>;
  /**
   * A time-limited GET URL for the object, signed for S3_PUBLIC_ENDPOINT when that is set. It
   * serves the file as a download (`attachment`) with `servedContentType(contentType)`.
   */
  presign: (key: string, filename: string, ttlSeconds: number, contentType: string) => Promise<string>;
  remove: (keys: string[]) => Promise<void>;
  /** Copies an object within the bucket (a quarantined file: src/shared/files). */
  copy: (from: string, to: string) => Promise<void>;
  /** Resolves when the bucket answers; used by the readiness check. */
  ping: () => Promise<void>;
  close: () => void;
};

type StorageConfig = Pick<
  Config,
  'S3_ENDPOINT' | 'S3_PUBLIC_ENDPOINT' | 'S3_REGION' | 'S3_BUCKET' | 'S3_ACCESS_KEY_ID' | 'S3_SECRET_ACCESS_KEY' | 'S3_FORCE_PATH_STYLE'
>;

/**
 * `maxConcurrentUploads` bounds the uploads past their first 256 KB in flight in this process: each
 * holds a 5 MB part in memory, and an upload waiting for a slot does not read its body, so the
 * client is paced by TCP. A file's first 256 KB are read under one of 32 slots of their own; a
 * file that ends there never takes one of the 5 MB slots.
 */
export function createStorage(config: StorageConfig, options: { maxConcurrentUploads?: number } = {}): Storage {
  const client = s3Client(config, config.S3_ENDPOINT);
  const uploadSlots = new Semaphore(options.maxConcurrentUploads ?? Infinity, 'large');
  // Links in emails must work from the recipient's machine: sign them for the public address.
  const publicClient = config.S3_PUBLIC_ENDPOINT ? s3Client(config, config.S3_PUBLIC_ENDPOINT) : client;
  const bucket = config.S3_BUCKET;
  // The first SMALL_FILE_BYTES of a file are read under a slot of their own: a form's usual files
  // end there and are stored without waiting for (or holding) one of the few 5 MB slots.
  const smallSlots = new Semaphore(SMALL_UPLOAD_SLOTS, 'small');

  return {
    client,
    bucket,
    async upload(key, body, contentType, payloadSha256) {
      // Stored as a download of a passive type: a client-declared text/html or SVG must never
      // render, with scripts, on the storage's origin.
      const params = { Bucket: bucket, Key: key, ContentType: servedContentType(contentType), ContentDisposition: 'attachment' };
      // A body that ends within the first part is one PutObject of known length; a longer one goes
      // to lib-storage, the bytes already read first.
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
          const data = head.chunks.length === 1 ? head.chunks[0]! : Buffer.concat(head.chunks);
          const put = new PutObjectCommand({ ...params, Body: data, ContentLength: data.length });
          const sha256 = payloadSha256?.();
          if (sha256) put.middlewareStack.add(knownPayloadHash(sha256), { step: 'build', name: 'knownPayloadHash' });
          await client.send(put);
        } else {
          await new Upload({
            client,
            params: { ...params, Body: Readable.from(replay(head.chunks, body)) },
            partSize: PART_BYTES,
            queueSize: 2,
            leavePartsOnError: false,
          }).done();
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
        await client.send(new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true } }));
      }
    },
    async copy(from, to) {
      await client.send(new CopyObjectCommand({ Bucket: bucket, Key: to, CopySource: `${bucket}/${from.split('/').map(encodeURIComponent).join('/')}` }));
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
const PASSIVE_TYPES =
  /^(?:image\/(?:png|jpeg|gif|webp|avif|bmp|heic|heif)|application\/(?:pdf|zip|octet-stream)|text\/(?:plain|csv)|audio\/[a-z0-9.+-]+|video\/[a-z0-9.+-]+)$/;

export const servedContentType = (declared: string) =>
  PASSIVE_TYPES.test(declared.trim().toLowerCase()) ? declared.trim().toLowerCase() : 'application/octet-stream';

/** At most `limit` holders at once; the others wait in arrival order, counted in cfs_uploads_waiting. */
class Semaphore {
  private active = 0;
  private readonly waiting: Array<() => void> = [];
  private readonly limit: number;
  private readonly slots: 'small' | 'large';
  constructor(limit: number, slots: 'small' | 'large') {
    this.limit = limit;
    this.slots = slots;
  }
  async acquire(): Promise<void> {
    if (this.active < this.limit) {
      this.active += 1;
      return;
    }
    uploadsWaiting.inc({ slots: this.slots });
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }
  release(): void {
    const next = this.waiting.shift();
    if (next) {
      uploadsWaiting.dec({ slots: this.slots });
      next(); // the slot passes straight to the next holder
    } else this.active -= 1;
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

/**
 * Signs a PutObject with the SHA-256 its caller already computed over the same bytes: the SigV4
 * signer takes an `x-amz-content-sha256` header, when present, as the payload hash instead of
 * hashing the body again.
 */
function knownPayloadHash(sha256: string): BuildMiddleware<PutObjectCommandInput, PutObjectCommandOutput> {
  return (next) => async (args) => {
    const request = args.request as { headers?: Record<string, string> } | undefined;
    if (request?.headers) request.headers['x-amz-content-sha256'] = sha256;
    return next(args);
  };
}

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
