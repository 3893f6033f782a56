// Stores the files of one request one after another. Each file passes through a meter that
// hashes and counts it; the next file is read only once the previous one is stored, so a request
// holds one upload's parts in memory and TCP backpressure paces the client. Files stored side by
// side would let a client that sends faster than storage takes fill the API's memory
// (docs/benchmarks.md#scenarios-and-targets).
import { createHash } from 'node:crypto';
import { finished, Transform, type Readable } from 'node:stream';
import type { Logger } from '../../shared/infra/log.ts';
import type { Storage } from '../../shared/infra/storage.ts';
import type { StoredFile } from './store.ts';

export type ChainedFile = {
  fieldName: string;
  /** Empty when the part carried no filename. */
  filename: string;
  contentType: string;
  objectKey: string;
  /** Called at the file's first byte; false stops the file (the chain is then being aborted). */
  onFirstByte: () => boolean;
};

export type UploadChain = {
  /** Files added so far (stored or not): numbers the object keys. */
  readonly length: number;
  /** Queues a file behind the ones before it. */
  add(stream: Readable, file: ChainedFile): void;
  /** All files stored: the stored ones, in order (an empty unnamed file stores nothing). Rejects with the first storage error. */
  settle(): Promise<StoredFile[]>;
  /**
   * Stops every file with `reason`, waits for the uploads to end, then deletes every object the
   * chain may have written. Never rejects: a failed deletion is logged.
   */
  abort(reason: Error): Promise<void>;
};

type Entry = { done: Promise<StoredFile | undefined>; meter: Transform };

export function createUploadChain(storage: Storage, log: Logger): UploadChain {
  const entries: Entry[] = [];
  const objectKeys: string[] = [];
  let last: Promise<void> = Promise.resolve();
  let abortReason: Error | undefined;

  const add = (stream: Readable, file: ChainedFile) => {
    const hash = createHash('sha256');
    let sha256: string | undefined; // set once the file has ended
    let size = 0;
    // Settles at the file's first byte or at its end, whichever comes first.
    const started: PromiseWithResolvers<void> = Promise.withResolvers();
    const meter = new Transform({
      // One chunk per read, as it came: a byte-mode reader is handed all buffered chunks copied
      // into one Buffer (storage.ts reads with an async iterator, then joins the chunks itself).
      // One chunk buffered at most, about what the byte-mode high-water mark (64 KB) held.
      readableObjectMode: true,
      readableHighWaterMark: 1,
      transform(chunk: Buffer, _encoding, callback) {
        if (size === 0 && !file.onFirstByte()) {
          callback(abortReason ?? new Error('upload stopped'));
          return;
        }
        size += chunk.length;
        hash.update(chunk);
        started.resolve();
        callback(null, chunk);
      },
      flush(callback) {
        sha256 = hash.digest('hex');
        started.resolve();
        callback();
      },
    });
    objectKeys.push(file.objectKey);
    const previous = last;
    // An abort may destroy the meter before its pipeline exists; the pipeline reports the error.
    meter.on('error', () => undefined);
    const done = (async (): Promise<StoredFile | undefined> => {
      await previous;
      const piped = pipeInto(stream, meter);
      // An upload slot is taken only once the file has a byte (or has ended): a client that
      // sends a part's headers and then nothing holds none.
      await Promise.race([started.promise, piped]);
      if (size === 0 && !file.filename) {
        // An empty file input: nothing to store, no slot taken.
        meter.resume();
        await piped;
        return undefined;
      }
      await Promise.all([piped, storage.upload(file.objectKey, meter, file.contentType, () => sha256)]);
      return {
        fieldName: file.fieldName,
        filename: file.filename || 'attachment',
        contentType: file.contentType,
        size,
        storageKey: file.objectKey,
        sha256: sha256 ?? hash.digest('hex'),
      };
    })();
    done.catch(() => undefined); // observed through allSettled
    last = done.then(
      () => undefined,
      () => undefined,
    );
    entries.push({ done, meter });
  };

  const settled = () => Promise.allSettled(entries.map((entry) => entry.done));

  return {
    get length() {
      return entries.length;
    },
    add,
    async settle() {
      const results = await settled();
      const rejected = results.find((result) => result.status === 'rejected');
      if (rejected) throw rejected.reason;
      return results.flatMap((result) => (result.status === 'fulfilled' && result.value ? [result.value] : []));
    },
    async abort(reason) {
      abortReason ??= reason;
      // Ending each body makes its upload fail on its own; an upload whose body was read whole
      // finishes first. Only then are the objects deleted, so none lands after the deletion.
      for (const entry of entries) entry.meter.destroy(reason);
      await settled();
      try {
        if (objectKeys.length) await storage.remove(objectKeys);
      } catch (error) {
        log.error({ err: error, objectKeys }, 'could not delete uploaded objects');
      }
    },
  };
}

/**
 * `source.pipe(meter)` with pipeline's error handling: an error or a premature close on either
 * side destroys both and rejects; resolves once the meter has flushed. Not `stream.pipeline`: it
 * aborts an AbortController when it ends, and each abort builds a DOMException with a stack
 * trace, a cost paid on every file of every request (docs/benchmarks.md#scenarios-and-targets).
 */
function pipeInto(source: Readable, meter: Transform): Promise<void> {
  return new Promise((resolve, reject) => {
    finished(source, { writable: false }, (error) => {
      if (error) meter.destroy(error);
    });
    finished(meter, { readable: false }, (error) => {
      if (!error) return resolve();
      source.destroy(error);
      reject(error);
    });
    source.pipe(meter);
  });
}
