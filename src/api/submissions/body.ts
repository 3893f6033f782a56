// Reads a submission body by its content type into fields in arrival order (and, for multipart,
// the files already streamed to storage).
import type { Storage } from '../../shared/infra/storage.ts';
import { bodyBrokenOff, brokenBodyError } from '../broken-body.ts';
import type { AppContext } from '../context.ts';
import { ApiError, errors } from '../api-errors.ts';
import { BODY_FIELD_LIMIT, bodyText, FORM_TYPE, parseJsonObject, readBodyText } from '../middleware/json-body.ts';
import type { RawFields } from './input.ts';
import { readMultipart } from './multipart.ts';
import type { StoredFile } from './store.ts';

export const SUBMISSION_TYPES = ['application/json', FORM_TYPE, 'multipart/form-data'];

export type SubmissionBody = { fields: RawFields; files: StoredFile[] };

export async function readSubmissionBody(ctx: AppContext, storage: Storage, submissionId: string): Promise<SubmissionBody> {
  try {
    return await readBody(ctx, storage, submissionId);
  } catch (error) {
    // An ApiError so that the refusal is counted by its reason, not as an internal one.
    throw !(error instanceof ApiError) && bodyBrokenOff(ctx.req) ? brokenBodyError() : error;
  }
}

async function readBody(ctx: AppContext, storage: Storage, submissionId: string): Promise<SubmissionBody> {
  if (ctx.is('multipart/form-data')) return readMultipart(ctx.req, storage, submissionId, ctx.state.log);
  if (!ctx.is(['application/json', FORM_TYPE])) throw errors.unsupportedMediaType(SUBMISSION_TYPES);

  await readBodyText(ctx, async () => undefined);
  const text = bodyText(ctx.request);
  // URLSearchParams keeps the order and repetition of fields and treats every name as plain data.
  if (ctx.is(FORM_TYPE)) {
    if (countPairs(text) > BODY_FIELD_LIMIT) throw errors.tooManyFields(BODY_FIELD_LIMIT);
    return { fields: [...new URLSearchParams(text)], files: [] };
  }
  return { fields: Object.entries(parseJsonObject(text)), files: [] };
}

/** The pairs of a urlencoded body, counted before it is decoded (stops past the limit). */
function countPairs(text: string): number {
  let pairs = text.length > 0 ? 1 : 0;
  for (let at = text.indexOf('&'); at !== -1 && pairs <= BODY_FIELD_LIMIT; at = text.indexOf('&', at + 1)) pairs += 1;
  return pairs;
}
