// Reads a multipart/form-data submission as it arrives: fields in order, each file streamed to
// storage (upload-chain.ts), nothing held whole in memory, no temp files. This file wires busboy's
// events to the limits counter (multipart-limits.ts) and the upload chain: the first limit crossed
// stops the reading, and every object stored for the request is deleted.
import type { IncomingMessage } from 'node:http';
import busboy from 'busboy';
import type { Logger } from '../../shared/infra/log.ts';
import type { Storage } from '../../shared/infra/storage.ts';
import { bodyBrokenOff, brokenBodyError } from '../broken-body.ts';
import { ApiError, errors } from '../api-errors.ts';
import { boundaryOf, cutAtCloseDelimiter } from './close-delimiter.ts';
import { displayFilename, safeContentType, storageFilename } from './filenames.ts';
import type { RawFields } from './input.ts';
import { createMultipartLimits, parserLimitErrors, PARSER_LIMITS } from './multipart-limits.ts';
import type { StoredFile } from './store.ts';
import { createUploadChain } from './upload-chain.ts';

export type MultipartBody = { fields: RawFields; files: StoredFile[] };

export function readMultipart(req: IncomingMessage, storage: Storage, submissionId: string, log: Logger): Promise<MultipartBody> {
  return new Promise((resolve, reject) => {
    // Broken off before the reading starts: the events below have already fired and would not again.
    if (bodyBrokenOff(req)) {
      reject(brokenBodyError());
      return;
    }
    let parser: busboy.Busboy;
    try {
      parser = busboy({ headers: req.headers, defParamCharset: 'utf8', limits: PARSER_LIMITS });
    } catch {
      reject(errors.malformedBody('multipart/form-data needs a boundary.'));
      return;
    }

    const fields: RawFields = [];
    const limits = createMultipartLimits();
    const uploads = createUploadChain(storage, log);
    let failure: ApiError | undefined;

    /** Stops reading, cancels the uploads, deletes what was stored, then rejects with `error`. */
    const fail = (error: ApiError) => {
      if (failure) return;
      failure = error;
      req.unpipe();
      void uploads.abort(error).finally(() => reject(error));
    };
    /** Fails with `error` if there is one; true while the request is still good. */
    const ok = (error: ApiError | undefined): boolean => {
      if (error) fail(error);
      return !failure;
    };
    const countFile = () => ok(limits.file());

    // Busboy hands a part without a name in its Content-Disposition over with `name` undefined.
    parser.on('field', (rawName: string | undefined, value, info) => {
      if (failure) return;
      const name = rawName ?? '';
      if (ok(limits.field(name, value, { name: info.nameTruncated, value: info.valueTruncated }))) fields.push([name, value]);
    });

    parser.on('file', (rawFieldName: string | undefined, stream, info) => {
      const fieldName = rawFieldName ?? '';
      const filename = displayFilename(info.filename);
      if (failure || !ok(limits.fileFieldName(fieldName)) || (filename && !countFile())) {
        stream.resume();
        return;
      }
      uploads.add(stream, {
        fieldName,
        filename,
        contentType: safeContentType(info.mimeType),
        objectKey: `submissions/${submissionId}/${uploads.length + 1}-${storageFilename(filename)}`,
        onFirstByte: () => (filename ? true : countFile()),
      });
      // A body that ends inside a file errors the file stream, and busboy may then emit nothing else.
      stream.on('error', () => fail(errors.malformedBody('the multipart body ended inside a file.')));
      stream.on('limit', () => fail(parserLimitErrors.fileTooLarge()));
    });

    parser.on('filesLimit', () => fail(parserLimitErrors.filesLimit()));
    parser.on('fieldsLimit', () => fail(parserLimitErrors.fieldsLimit()));
    parser.on('partsLimit', () => fail(parserLimitErrors.partsLimit()));
    parser.on('error', () => fail(errors.malformedBody('the multipart body could not be read.')));
    req.on('aborted', () => fail(brokenBodyError()));
    // A connection closed mid-body (by the client, or by the stalled-body watchdog).
    req.on('close', () => {
      if (!req.complete) fail(brokenBodyError());
    });

    parser.on('close', () => {
      if (failure) return;
      uploads.settle().then(
        (files) => {
          if (!failure) resolve({ fields, files });
        },
        (error: unknown) => {
          if (failure) return;
          log.error({ err: error }, 'storage upload failed');
          fail(errors.storageFailed());
        },
      );
    });

    const boundary = boundaryOf(req.headers['content-type']);
    const body = boundary === undefined ? req : req.pipe(cutAtCloseDelimiter(boundary));
    body.pipe(parser);
  });
}
