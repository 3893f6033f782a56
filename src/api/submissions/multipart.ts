// Reads a multipart/form-data submission as it arrives: fields in order, each file streamed to
// storage through a meter that hashes and counts it, nothing held whole in memory, no temp files.
// The first limit crossed stops the reading, and every object stored for the request is deleted.
import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import busboy from 'busboy';
import type { Logger } from '../../shared/log.ts';
import type { Storage } from '../../shared/storage.ts';
import { ApiError, errors } from '../errors.ts';
import { displayFilename, safeContentType, storageFilename } from './filenames.ts';
import { BODY_FIELD_LIMIT, JSON_LIMIT_BYTES } from '../middleware/json-body.ts';
import { LIMITS, type RawFields } from './input.ts';
import type { StoredFile } from './store.ts';

export const FILE_LIMITS = { files: 10, bytesPerFile: 10 * 1024 * 1024 } as const;

/** Field names and values of a multipart body share the bound of a JSON body. */
const FIELD_BYTES = JSON_LIMIT_BYTES;
/**
 * Busboy's own caps; they bound a hostile body. Files: above ours, so that our counting decides.
 * Fields: the per-body field limit itself, counted by busboy as the parts arrive.
 */
const PARSER_LIMITS = {
  files: FILE_LIMITS.files + 20,
  fields: BODY_FIELD_LIMIT,
  parts: BODY_FIELD_LIMIT + FILE_LIMITS.files + 20,
  fieldNameSize: 1_000,
};

export type MultipartBody = { fields: RawFields; files: StoredFile[] };

type Upload = { done: Promise<StoredFile | undefined>; meter: Transform };

/**
 * Passes a multipart body up to its close delimiter (`--boundary--`) and drops the rest. Busboy
 * keeps parsing parts that follow the delimiter in the same chunk and then waits forever for
 * their end; per RFC 2046 what follows the delimiter is an epilogue to ignore anyway.
 */
function cutAtCloseDelimiter(boundary: string): Transform {
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

export function readMultipart(
  req: IncomingMessage,
  storage: Storage,
  submissionId: string,
  log: Logger,
): Promise<MultipartBody> {
  return new Promise((resolve, reject) => {
    let parser: busboy.Busboy;
    try {
      parser = busboy({
        headers: req.headers,
        defParamCharset: 'utf8',
        // Busboy signals 'limit' when a file reaches fileSize: one byte more than we accept.
        limits: { ...PARSER_LIMITS, fieldSize: FIELD_BYTES, fileSize: FILE_LIMITS.bytesPerFile + 1 },
      });
    } catch {
      reject(errors.malformedBody('multipart/form-data needs a boundary.'));
      return;
    }

    const fields: RawFields = [];
    const uploads: Upload[] = [];
    const objectKeys: string[] = [];
    let fieldBytes = 0;
    let fileCount = 0;
    let failure: ApiError | undefined;

    /** Stops reading, cancels the uploads, deletes what was stored, then rejects with `error`. */
    const fail = (error: ApiError) => {
      if (failure) return;
      failure = error;
      req.unpipe();
      // Ending each body makes its upload fail on its own; an upload whose body was read whole
      // finishes first. Only then are the objects deleted, so none lands after the deletion.
      for (const upload of uploads) upload.meter.destroy(error);
      void Promise.allSettled(uploads.map((upload) => upload.done))
        .then(() => (objectKeys.length ? storage.remove(objectKeys) : undefined))
        .catch((cleanupError: unknown) => log.error({ err: cleanupError, objectKeys }, 'could not delete uploaded objects'))
        .finally(() => reject(error));
    };

    /** A file counts once it has a name or its first byte: an empty file input is ignored. */
    const countFile = () => {
      fileCount += 1;
      if (fileCount > FILE_LIMITS.files) fail(errors.tooManyFiles(FILE_LIMITS.files));
      return !failure;
    };

    // Busboy hands a part without a name in its Content-Disposition over with `name` undefined.
    parser.on('field', (rawName: string | undefined, value, info) => {
      if (failure) return;
      const name = rawName ?? '';
      fieldBytes += Buffer.byteLength(name) + Buffer.byteLength(value);
      if (info.valueTruncated || fieldBytes > FIELD_BYTES) {
        fail(errors.payloadTooLarge(`Form fields larger than ${FIELD_BYTES / 1024 / 1024} MB in all.`));
        return;
      }
      if (info.nameTruncated) {
        fail(errors.invalidFields({ [name.slice(0, 40)]: ['Field name too long.'] }));
        return;
      }
      fields.push([name, value]);
    });

    parser.on('file', (rawFieldName: string | undefined, stream, info) => {
      const fieldName = rawFieldName ?? '';
      if (failure) {
        stream.resume();
        return;
      }
      if (fieldName.length > LIMITS.fieldNameLength) {
        stream.resume();
        fail(errors.invalidFields({ [fieldName.slice(0, 40)]: [`Field name longer than ${LIMITS.fieldNameLength} characters.`] }));
        return;
      }
      const filename = displayFilename(info.filename);
      if (filename && !countFile()) {
        stream.resume();
        return;
      }
      const objectKey = `submissions/${submissionId}/${uploads.length + 1}-${storageFilename(filename)}`;
      const upload = streamFile(stream, {
        fieldName,
        filename,
        contentType: safeContentType(info.mimeType),
        objectKey,
        onFirstByte: () => (filename ? true : countFile()),
      });
      uploads.push(upload);
      // A body that ends inside a file errors the file stream, and busboy may then emit nothing else.
      stream.on('error', () => fail(errors.malformedBody('the multipart body ended inside a file.')));
      stream.on('limit', () =>
        fail(errors.payloadTooLarge(`File too large: at most ${FILE_LIMITS.bytesPerFile} bytes (10 MB) per file.`)),
      );
    });

    const tooMany = (what: string) => () => fail(errors.invalidFields({ __all__: [`Too many ${what}.`] }, `Too many ${what}.`));
    parser.on('filesLimit', () => fail(errors.tooManyFiles(FILE_LIMITS.files)));
    parser.on('fieldsLimit', () => fail(errors.tooManyFields(BODY_FIELD_LIMIT)));
    parser.on('partsLimit', tooMany('parts'));
    parser.on('error', () => fail(errors.malformedBody('the multipart body could not be read.')));
    req.on('aborted', () => fail(errors.malformedBody('the request was aborted.')));
    // A connection closed mid-body (by the client, or by the stalled-body watchdog).
    req.on('close', () => {
      if (!req.complete) fail(errors.malformedBody('the request was aborted.'));
    });

    parser.on('close', () => {
      if (failure) return;
      void Promise.allSettled(uploads.map((upload) => upload.done)).then((results) => {
        if (failure) return;
        const rejected = results.find((result) => result.status === 'rejected');
        if (rejected) {
          log.error({ err: rejected.reason }, 'storage upload failed');
          fail(errors.storageFailed());
          return;
        }
        const files = results.flatMap((result) => (result.status === 'fulfilled' && result.value ? [result.value] : []));
        resolve({ fields, files });
      });
    });

    const boundary = /boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(req.headers['content-type'] ?? '');
    const body = boundary ? req.pipe(cutAtCloseDelimiter(boundary[1] ?? boundary[2] ?? '')) : req;
    body.pipe(parser);

    let lastUpload: Promise<void> = Promise.resolve();

    function streamFile(
      stream: Readable,
      file: { fieldName: string; filename: string; contentType: string; objectKey: string; onFirstByte: () => boolean },
    ): Upload {
      const hash = createHash('sha256');
      let size = 0;
      // Settles at the file's first byte or at its end, whichever comes first.
      const started = Promise.withResolvers<void>();
      const meter = new Transform({
        transform(chunk: Buffer, _encoding, callback) {
          if (size === 0 && !file.onFirstByte()) {
            callback(failure);
            return;
          }
          size += chunk.length;
          hash.update(chunk);
          started.resolve();
          callback(null, chunk);
        },
        flush(callback) {
          started.resolve();
          callback();
        },
      });
      objectKeys.push(file.objectKey);
      // One file at a time: the next file is read only once the previous one is stored, so a
      // request holds one upload's parts in memory and TCP backpressure paces the client.
      // (Concurrent files piled up whole in memory when storage was slower: npm run bench, scenario 5.)
      const previous = lastUpload;
      // A failure may destroy the meter before its pipeline exists; the pipeline reports the error.
      meter.on('error', () => undefined);
      const done = (async (): Promise<StoredFile | undefined> => {
        await previous;
        const piped = pipeline(stream, meter);
        // An upload slot is taken only once the file has a byte (or has ended): a client that
        // sends a part's headers and then nothing holds none.
        await Promise.race([started.promise, piped]);
        if (size === 0 && !file.filename) {
          // An empty file input: nothing to store, no slot taken.
          meter.resume();
          await piped;
          return undefined;
        }
        await Promise.all([piped, storage.upload(file.objectKey, meter, file.contentType)]);
        return {
          fieldName: file.fieldName,
          filename: file.filename || 'attachment',
          contentType: file.contentType,
          size,
          storageKey: file.objectKey,
          sha256: hash.digest('hex'),
        };
      })();
      done.catch(() => undefined); // observed through allSettled
      lastUpload = done.then(() => undefined, () => undefined);
      return { done, meter };
    }
  });
}
