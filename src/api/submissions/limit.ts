// The rate limit of a submission. A small JSON or urlencoded body (at most SMALL_BODY_BYTES, as its
// Content-Length declares) is read before the limit's verdict: its ALTCHA answer's replay mark is
// then set by the limit's own Redis call, one round trip per submission instead of two. Every
// other body (multipart's files go to storage as they arrive) is read only once the limit lets the
// request in. Either way each request counts one hit, and over the limit the answer is the 429.
import type { AppContext } from '../context.ts';
import { FORM_TYPE } from '../middleware/json-body.ts';
import type { RateLimiter } from '../middleware/rate-limit.ts';
import { ALTCHA_FIELD, type Altcha, type CheckedAnswer } from './altcha.ts';
import type { SubmissionBody } from './body.ts';

/** The most a client over the limit can make the API read and parse before its 429. */
export const SMALL_BODY_BYTES = 16 * 1024;

export type LimitedSubmission = {
  /** The body: read already where it was small (a failure to read it comes out here). */
  body: () => Promise<SubmissionBody>;
  /** The ALTCHA answer of a body read before the verdict, checked as far as it can be without its key, and its mark's outcome. */
  altcha?: { answer: CheckedAnswer; marked: boolean | Error | undefined };
};

export async function limitSubmission(
  ctx: AppContext,
  limiter: RateLimiter,
  altcha: Altcha,
  readBody: () => Promise<SubmissionBody>,
): Promise<LimitedSubmission> {
  if (!isSmallFormBody(ctx)) {
    await limiter.hit(ctx);
    return { body: readBody };
  }
  const reading = readBody();
  // Settled, with its rejection handled here: the handler gets it from `body`.
  const read = await reading.then(
    (body) => ({ body }),
    () => ({}),
  );
  const answerField = 'body' in read ? read.body.fields.find(([name]) => name === ALTCHA_FIELD) : undefined;
  const answer = answerField ? altcha.check(answerField[1]) : undefined;
  const marked = await limiter.hit(ctx, answer && 'mark' in answer ? answer.mark : undefined);
  return {
    body: () => reading,
    altcha: answer && { answer, marked },
  };
}

// Only a declared length: a chunked body's size is known only once read.
const isSmallFormBody = (ctx: AppContext) =>
  ctx.get('Content-Length') !== '' &&
  ctx.get('Transfer-Encoding') === '' &&
  ctx.request.length <= SMALL_BODY_BYTES &&
  ctx.is(['application/json', FORM_TYPE]) !== false;
