// S3-compatible object storage: MinIO locally, S3 in production, s3rver in the tests.
import { Readable } from 'node:stream';
import {
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadBucketCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import type { BuildMiddleware, MetadataBearer } from '@aws-sdk/types';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { Config } from './config.ts';

export type Storage = {
  client: S3Client;
  bucket: string;
  /**
   * Streams a body into the bucket without holding it in memory. `payloadSha256`, when given,
   * returns the body's SHA-256 (hex) once the body has ended (undefined before): a file sent as
   * one PutObject is then signed with it instead of being hashed a second time by the SDK.
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
 * `maxConcurrentUploads` bounds the uploads in flight in this process: each holds a 5 MB part in
 * memory, and an upload waiting for a slot does not read its body, so the client is paced by TCP.
 */
export function createStorage(config: StorageConfig, options: { maxConcurrentUploads?: number } = {}): Storage {
  const client = s3Client(config, config.S3_ENDPOINT);
  const uploadSlots = new Semaphore(options.maxConcurrentUploads ?? Infinity);
  // Links in emails must work from the recipient's machine: sign them for the public address.
  const publicClient = config.S3_PUBLIC_ENDPOINT ? s3Client(config, config.S3_PUBLIC_ENDPOINT) : client;
  const bucket = config.S3_BUCKET;
  const payloadHashes = new Map<string, () => string | undefined>();
  client.middlewareStack.add(knownPayloadHash(payloadHashes), { step: 'build', name: 'knownPayloadHash' });

  return {
    client,
    bucket,
    async upload(key, body, contentType, payloadSha256) {
      await uploadSlots.acquire();
      if (payloadSha256) payloadHashes.set(key, payloadSha256);
      try {
        const upload = new Upload({
          client,
          // Stored as a download of a passive type: a client-declared text/html or SVG must never
          // render, with scripts, on the storage's origin.
          params: { Bucket: bucket, Key: key, Body: body, ContentType: servedContentType(contentType), ContentDisposition: 'attachment' },
          queueSize: 2,
          leavePartsOnError: false,
        });
        await upload.done();
      } finally {
        payloadHashes.delete(key);
        uploadSlots.release();
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

/**
 * Signs a PutObject with the SHA-256 its caller already computed (the `x-amz-content-sha256`
 * header, which the SigV4 signer uses as the payload hash when present). lib-storage sends a
 * PutObject only for a body that has ended within its first part, so the hash is then complete;
 * parts of larger files (UploadPart) are still hashed by the SDK.
 */
function knownPayloadHash(hashes: Map<string, () => string | undefined>): BuildMiddleware<object, MetadataBearer> {
  return (next, context) => async (args) => {
    const key = (args.input as { Key?: unknown }).Key;
    const sha256 = context.commandName === 'PutObjectCommand' && typeof key === 'string' ? hashes.get(key)?.() : undefined;
    const request = args.request as { headers?: Record<string, string> } | undefined;
    if (sha256 && request?.headers) request.headers['x-amz-content-sha256'] = sha256;
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
