// Counts what a multipart body carries against its bounds: field bytes, field names, files. Each
// check returns the error to answer with (the first one crossed), or undefined.
import { ApiError, errors } from '../api-errors.ts';
import { BODY_FIELD_LIMIT, JSON_LIMIT_BYTES } from '../middleware/json-body.ts';
import { LIMITS } from './input.ts';

export const FILE_LIMITS = { files: 10, bytesPerFile: 10 * 1024 * 1024 } as const;

/** Field names and values of a multipart body share the bound of a JSON body. */
export const FIELD_BYTES = JSON_LIMIT_BYTES;

/**
 * Busboy's own caps; they bound a hostile body. Files: above ours, so that our counting decides.
 * Fields: the per-body field limit itself, counted by busboy as the parts arrive. Busboy signals
 * 'limit' when a file reaches fileSize: one byte more than we accept.
 */
export const PARSER_LIMITS = {
  files: FILE_LIMITS.files + 20,
  fields: BODY_FIELD_LIMIT,
  parts: BODY_FIELD_LIMIT + FILE_LIMITS.files + 20,
  fieldNameSize: 1_000,
  fieldSize: FIELD_BYTES,
  fileSize: FILE_LIMITS.bytesPerFile + 1,
} as const;

const tooMany = (what: string) => errors.invalidFields({ __all__: [`Too many ${what}.`] }, `Too many ${what}.`);

/** The errors for busboy's own limit events. */
export const parserLimitErrors = {
  filesLimit: () => errors.tooManyFiles(FILE_LIMITS.files),
  fieldsLimit: () => errors.tooManyFields(BODY_FIELD_LIMIT),
  partsLimit: () => tooMany('parts'),
  fileTooLarge: () => errors.payloadTooLarge(`File too large: at most ${FILE_LIMITS.bytesPerFile} bytes (10 MB) per file.`),
} as const;

export type MultipartLimits = {
  /** A text field; `truncated` flags come from busboy. */
  field(name: string, value: string, truncated: { name: boolean; value: boolean }): ApiError | undefined;
  /** A file part's field name. */
  fileFieldName(name: string): ApiError | undefined;
  /** One more file: it counts once it has a name or its first byte (an empty file input does not). */
  file(): ApiError | undefined;
};

export function createMultipartLimits(): MultipartLimits {
  let fieldBytes = 0;
  let files = 0;
  return {
    field(name, value, truncated) {
      fieldBytes += Buffer.byteLength(name) + Buffer.byteLength(value);
      if (truncated.value || fieldBytes > FIELD_BYTES) {
        return errors.payloadTooLarge(`Form fields larger than ${FIELD_BYTES / 1024 / 1024} MB in all.`);
      }
      if (truncated.name) return errors.invalidFields({ [name.slice(0, 40)]: ['Field name too long.'] });
      return undefined;
    },
    fileFieldName(name) {
      if (name.length <= LIMITS.fieldNameLength) return undefined;
      return errors.invalidFields({ [name.slice(0, 40)]: [`Field name longer than ${LIMITS.fieldNameLength} characters.`] });
    },
    file() {
      files += 1;
      return files > FILE_LIMITS.files ? errors.tooManyFiles(FILE_LIMITS.files) : undefined;
    },
  };
}
