// Idempotency-Key on a submission: a client that lost an answer sends the same request again with
// the same key and gets the first answer, with the first submission, instead of a second one. A
// key is the key's (one verification key's keys never meet another's) for IDEMPOTENCY_KEPT_HOURS
// (src/shared/submissions);
// the same key with another request is refused, as payment APIs do. The fingerprint is of the
// request's fields and files, not its bytes: a multipart retry has another boundary.
import { createHash } from 'node:crypto';
import { ApiError, errors } from '../api-errors.ts';

export const IDEMPOTENCY_HEADER = 'Idempotency-Key';
/** Its longest value: a UUID or a ULID fits many times over. */
const IDEMPOTENCY_KEY_MAX = 255;

/** The header's value: undefined when absent; a 400 when it is not 1–255 visible ASCII characters. */
export function idempotencyKeyOf(header: string): string | undefined {
  if (header === '') return undefined;
  if (header.length > IDEMPOTENCY_KEY_MAX || !/^[\x21-\x7e]+$/.test(header)) {
    throw errors.invalidFields({ [IDEMPOTENCY_HEADER]: [`An ${IDEMPOTENCY_HEADER} is 1 to ${IDEMPOTENCY_KEY_MAX} visible ASCII characters.`] });
  }
  return header;
}

/** The request's fields in their order and its files by content: what a retry must repeat. */
export function requestFingerprint(body: {
  fields: ReadonlyArray<readonly [string, unknown]>;
  files: ReadonlyArray<{ fieldName: string; filename: string; size: number; sha256: string }>;
}): string {
  const files = body.files.map((file) => [file.fieldName, file.filename, file.size, file.sha256]);
  return createHash('sha256')
    .update(JSON.stringify([body.fields, files]))
    .digest('base64url');
}

/** The same key came with another request. */
export const idempotencyKeyReused = () =>
  new ApiError(422, 'idempotency_key_reused', `This ${IDEMPOTENCY_HEADER} was used with another request.`, {
    [IDEMPOTENCY_HEADER]: [`This ${IDEMPOTENCY_HEADER} was used with another request: send a new key for a new submission.`],
    __all__: [`This ${IDEMPOTENCY_HEADER} was used with another request.`],
  });

/** Thrown in the transaction that would store a submission whose key an earlier request took: it rolls back, and the route answers as the first. */
export class IdempotencyKeyTaken extends Error {
  override name = 'IdempotencyKeyTaken';
  readonly submissionId: string;
  readonly fingerprint: string;
  constructor(record: { submissionId: string; fingerprint: string }) {
    super(`the Idempotency-Key was taken by submission ${record.submissionId}`);
    this.submissionId = record.submissionId;
    this.fingerprint = record.fingerprint;
  }
}
