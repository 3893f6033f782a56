// Reads a submission body by its content type into fields in arrival order (and, for multipart,
// the files already streamed to storage).
import { koaBody } from 'koa-body';
import type { Storage } from '../../shared/storage.ts';
import type { AppContext } from '../context.ts';
import { errors } from '../errors.ts';
import { JSON_LIMIT_BYTES } from '../middleware/json-body.ts';
import type { RawFields } from './input.ts';
import { readMultipart } from './multipart.ts';
import type { StoredFile } from './store.ts';

export const SUBMISSION_TYPES = ['application/json', 'application/x-www-form-urlencoded', 'multipart/form-data'];

const FORM_TYPE = 'application/x-www-form-urlencoded';

// JSON is parsed by koa-body; a urlencoded body is read as text and split by URLSearchParams,
// which keeps the order and repetition of fields and treats every name as plain data.
const parseJsonOrForm = koaBody({
  json: true,
  jsonStrict: true,
  jsonLimit: JSON_LIMIT_BYTES,
  text: true,
  textTypes: [FORM_TYPE],
  textLimit: JSON_LIMIT_BYTES,
  urlencoded: false,
  multipart: false,
});

export type SubmissionBody = { fields: RawFields; files: StoredFile[] };

export async function readSubmissionBody(ctx: AppContext, storage: Storage, submissionId: string): Promise<SubmissionBody> {
  if (ctx.is('multipart/form-data')) return readMultipart(ctx.req, storage, submissionId, ctx.state.log);
  if (!ctx.is(['application/json', FORM_TYPE])) throw errors.unsupportedMediaType(SUBMISSION_TYPES);

  await parseJsonOrForm(ctx, async () => undefined);
  const body: unknown = ctx.request.body;
  if (ctx.is(FORM_TYPE)) return { fields: [...new URLSearchParams(String(body ?? ''))], files: [] };
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw errors.malformedBody('expected a JSON object.');
  return { fields: Object.entries(body), files: [] };
}
