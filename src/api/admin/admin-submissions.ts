// The operator's submissions: listed, exported as CSV, shown one by one with their webhook
// deliveries and their copies to added recipients, re-sent, and the retry timers flushed.
import * as v from 'valibot';
import type { EntityManager } from '@mikro-orm/postgresql';
import { EMAIL_STATUSES } from '../../shared/deliveries/delivery-columns.ts';
import type { Submission } from '../../shared/submissions/entities.ts';
import {
  decodeCursor,
  findSubmissionById,
  listSubmissions,
  reloadSubmission,
  submissionRecord,
  submissionRecords,
} from '../../shared/submissions/submissions.ts';
import { listWebhookDeliveries } from '../../shared/webhooks/webhooks.ts';
import { flushRetries } from '../../shared/deliveries/retry-flush.ts';
import { copiesOfSubmissions, type CopyRecord } from '../../shared/recipients/recipients.ts';
import type { AppDeps, RouteContext } from '../context.ts';
import { errors } from '../api-errors.ts';
import { validate } from '../validate.ts';
import { resendCopy, resendSubmission } from '../submissions/resend.ts';
import { submissionsCsv } from '../submissions/submissions-csv.ts';
import { takeExport } from '../heavy-reads.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const SubmissionListQuerySchema = v.object({
  key: v.optional(v.pipe(v.string('Give one key.'), v.minLength(1))),
  status: v.optional(v.picklist(EMAIL_STATUSES, `Must be one of ${EMAIL_STATUSES.join(', ')}.`)),
  limit: v.optional(v.pipe(v.string(), v.regex(/^\d+$/, 'Must be a whole number.'), v.transform(Number), v.minValue(1), v.maxValue(200, 'At most 200.')), '50'),
  cursor: v.optional(v.string('Give one cursor.')),
});

const CsvQuerySchema = v.object({ key: v.pipe(v.string('Give ?key=<key>.'), v.minLength(1, 'Give ?key=<key>.')) });

const DeliveryLogQuerySchema = v.object({
  limit: v.optional(v.pipe(v.string(), v.regex(/^\d+$/, 'Must be a whole number.'), v.transform(Number), v.minValue(1), v.maxValue(200, 'At most 200.')), '50'),
});

export const FlushRequestSchema = v.strictObject(
  {
    per_second: v.optional(
      v.pipe(
        v.number('Must be a whole number.'),
        v.integer('Must be a whole number.'),
        v.minValue(1, 'At least 1.'),
        v.maxValue(10_000, 'At most 10000.'),
        v.description('The pace: at most this many emails tried a second (default RETRY_FLUSH_PER_SECOND)'),
      ),
    ),
  },
  'Only per_second can be given.',
);

const viewOf = (deps: AppDeps) => ({ vault: deps.vault, mailFrom: deps.config.MAIL_FROM });

/** GET /admin/submissions: a page of submissions, by key and status. */
export async function listSubmissionPage(ctx: RouteContext, deps: AppDeps): Promise<void> {
  const query = validate(SubmissionListQuerySchema, { ...ctx.query });
  const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor);
  if (query.cursor !== undefined && !after) throw errors.invalidFields({ cursor: ['Not a cursor of this list.'] });
  const em = ctx.state.em;
  const { page, nextCursor } = await listSubmissions(
    em,
    { keyHash: query.key === undefined ? undefined : deps.vault.hash(query.key), status: query.status, limit: query.limit },
    after,
  );
  ctx.body = { submissions: await withCopies(em, await submissionRecords(em, viewOf(deps), page)), next_cursor: nextCursor };
}

/** GET /admin/submissions.csv?key=: every submission of a key. */
export async function exportSubmissions(ctx: RouteContext, deps: AppDeps): Promise<void> {
  const { key } = validate(CsvQuerySchema, { key: ctx.query.key });
  const release = takeExport(deps, undefined);
  ctx.type = 'text/csv; charset=utf-8';
  ctx.attachment('submissions.csv');
  // The CSV streams after the handler returns: it reads on a unit of work of its own.
  ctx.body = await submissionsCsv(deps.orm.em.fork(), deps.vault.hash(key), {}, release);
}

/** GET /admin/submissions/:id */
export async function showSubmission(ctx: RouteContext, deps: AppDeps): Promise<void> {
  const em = ctx.state.em;
  ctx.body = await withCopiesOf(em, await submissionRecord(em, viewOf(deps), await submissionOr404(em, ctx.params.id)));
}

/** GET /admin/submissions/:id/webhook-deliveries */
export async function listSubmissionWebhookDeliveries(ctx: RouteContext): Promise<void> {
  const { limit } = validate(DeliveryLogQuerySchema, { ...ctx.query });
  const em = ctx.state.em;
  const submission = await submissionOr404(em, ctx.params.id);
  ctx.body = { deliveries: await listWebhookDeliveries(em, { submissionId: submission.id, limit }) };
}

/** POST /admin/deliveries/flush: the emails waiting on a retry timer, tried now at the pace asked (src/shared/deliveries/retry-flush.ts). */
export async function flushDeliveries(ctx: RouteContext, deps: AppDeps): Promise<void> {
  const { per_second: perSecond } = validate(FlushRequestSchema, ctx.request.body);
  if (deps.redis.status !== 'ready') throw errors.unavailable('The queue (Redis) cannot be reached: nothing was flushed. Try again once it is back.');
  const flushed = await flushRetries({ queue: deps.queue, redis: deps.redis, em: ctx.state.em }, perSecond ?? deps.config.RETRY_FLUSH_PER_SECOND);
  ctx.state.log.info(flushed, 'operator flushed the retry timers');
  ctx.body = flushed;
}

/** POST /admin/submissions/:id/resend: a failed email sent again. */
export async function resendSubmissionEmail(ctx: RouteContext, deps: AppDeps): Promise<void> {
  const em = ctx.state.em;
  const submission = await submissionOr404(em, ctx.params.id);
  await resendSubmission(ctx, deps, em, submission);
  ctx.state.log.info({ submissionId: submission.id }, 'operator re-sent a failed email');
  // As it now stands: queued again, its attempts and report reset.
  await reloadSubmission(em, submission);
  ctx.body = await withCopiesOf(em, await submissionRecord(em, viewOf(deps), submission));
}

/** POST /admin/submissions/:id/copies/:copyId/resend: an added recipient's copy sent again. */
export async function resendSubmissionCopy(ctx: RouteContext, deps: AppDeps): Promise<void> {
  const em = ctx.state.em;
  const submission = await submissionOr404(em, ctx.params.id);
  if (!UUID.test(ctx.params.copyId ?? '') || !(await resendCopy(ctx, deps, em, submission, ctx.params.copyId ?? ''))) {
    throw errors.notFound('Unknown copy of this submission.');
  }
  ctx.state.log.info({ submissionId: submission.id, copyId: ctx.params.copyId }, "operator re-sent a recipient's copy");
  ctx.body = await withCopiesOf(em, await submissionRecord(em, viewOf(deps), submission));
}

/** The operator's submission records with the copies to their keys' added recipients. */
async function withCopies<R extends { submission_id: string }>(em: EntityManager, records: R[]): Promise<Array<R & { copies: CopyRecord[] }>> {
  const copies = await copiesOfSubmissions(
    em,
    records.map((record) => record.submission_id),
  );
  return records.map((record) => ({ ...record, copies: copies.get(record.submission_id) ?? [] }));
}

const withCopiesOf = async <R extends { submission_id: string }>(em: EntityManager, record: R) => (await withCopies(em, [record]))[0]!;

async function submissionOr404(em: EntityManager, id: string | undefined): Promise<Submission> {
  const submission = id !== undefined && UUID.test(id) ? await findSubmissionById(em, id) : null;
  if (!submission) throw errors.notFound('Unknown submission.');
  return submission;
}
