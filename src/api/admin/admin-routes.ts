// The operator API under /admin: keys (with their added recipients), and submissions with their
// delivery status (and each added recipient's copy). The token is
// checked by the app-level admin guard (middleware/admin-auth.ts), whatever the path's spelling.
import type Router from '@koa/router';
import { createRouter } from '../router.ts';
import * as v from 'valibot';
import { EMAIL_STATUSES } from '../../shared/deliveries/delivery-columns.ts';
import type { Submission } from '../../shared/submissions/entities.ts';
import type { EntityManager } from '@mikro-orm/postgresql';
import {
  decodeCursor,
  findSubmissionById,
  listSubmissions,
  reloadSubmission,
  submissionRecord,
  submissionRecords,
} from '../../shared/submissions/submissions.ts';
import { listWebhookDeliveries } from '../../shared/webhooks/webhooks.ts';
import { AdminKeyPatchSchema, keyChangesOf } from '../keys/key-patch.ts';
import { flushRetries } from '../../shared/deliveries/retry-flush.ts';
import { keyRecord, listKeys, parseDomains } from '../../shared/keys/keys.ts';
import { changeKey } from '../keys/key-changes.ts';
import type { AppDeps, AppState } from '../context.ts';
import { errors } from '../api-errors.ts';
import { jsonObjectBody, optionalJsonObjectBody } from '../middleware/json-body.ts';
import { validate } from '../validate.ts';
import { resendCopy, resendSubmission } from '../submissions/resend.ts';
import { copiesOfSubmissions, recipientsOfKeys, type CopyRecord } from '../../shared/recipients/recipients.ts';
import type { VerificationKey } from '../../shared/keys/entities.ts';
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

const KeyListQuerySchema = v.object({
  email: v.pipe(v.string('Give ?email=<address>.'), v.trim(), v.email('Enter a valid email address.')),
});

export function adminRoutes(deps: AppDeps): Router<AppState> {
  const router = createRouter('/admin');
  const view = { vault: deps.vault, mailFrom: deps.config.MAIL_FROM };
  const optionalJson = optionalJsonObjectBody(() => errors.unsupportedMediaType(['application/json']));

  router.get('/keys', async (ctx) => {
    const { email } = validate(KeyListQuerySchema, { email: ctx.query.email });
    const keys = await listKeys(ctx.state.em, email);
    ctx.body = { email: email.toLowerCase(), keys: await keyRecords(ctx.state.em, deps, keys) };
  });

  router.get('/submissions.csv', async (ctx) => {
    const { key } = validate(CsvQuerySchema, { key: ctx.query.key });
    const release = takeExport(deps, undefined);
    ctx.type = 'text/csv; charset=utf-8';
    ctx.attachment('submissions.csv');
    // The CSV streams after the handler returns: it reads on a unit of work of its own.
    ctx.body = await submissionsCsv(deps.orm.em.fork(), deps.vault.hash(key), {}, release);
  });

  router.get('/submissions/:id', async (ctx) => {
    const em = ctx.state.em;
    ctx.body = await withCopiesOf(em, await submissionRecord(em, view, await submissionOr404(em, ctx.params.id)));
  });

  router.get('/submissions/:id/webhook-deliveries', async (ctx) => {
    const { limit } = validate(DeliveryLogQuerySchema, { ...ctx.query });
    const em = ctx.state.em;
    const submission = await submissionOr404(em, ctx.params.id);
    ctx.body = { deliveries: await listWebhookDeliveries(em, { submissionId: submission.id, limit }) };
  });

  // The emails waiting on a retry timer, tried now at the pace asked (src/shared/deliveries/retry-flush.ts).
  router.post('/deliveries/flush', optionalJson, async (ctx) => {
    const { per_second: perSecond } = validate(FlushRequestSchema, ctx.request.body);
    if (deps.redis.status !== 'ready') throw errors.unavailable('The queue (Redis) cannot be reached: nothing was flushed. Try again once it is back.');
    const flushed = await flushRetries({ queue: deps.queue, redis: deps.redis, em: ctx.state.em }, perSecond ?? deps.config.RETRY_FLUSH_PER_SECOND);
    ctx.state.log.info(flushed, 'operator flushed the retry timers');
    ctx.body = flushed;
  });

  router.post('/submissions/:id/resend', async (ctx) => {
    const em = ctx.state.em;
    const submission = await submissionOr404(em, ctx.params.id);
    await resendSubmission(ctx, deps, em, submission);
    ctx.state.log.info({ submissionId: submission.id }, 'operator re-sent a failed email');
    // As it now stands: queued again, its attempts and report reset.
    await reloadSubmission(em, submission);
    ctx.body = await withCopiesOf(em, await submissionRecord(em, view, submission));
  });

  router.post('/submissions/:id/copies/:copyId/resend', async (ctx) => {
    const em = ctx.state.em;
    const submission = await submissionOr404(em, ctx.params.id);
    if (!UUID.test(ctx.params.copyId ?? '') || !(await resendCopy(ctx, deps, em, submission, ctx.params.copyId ?? ''))) {
      throw errors.notFound('Unknown copy of this submission.');
    }
    ctx.state.log.info({ submissionId: submission.id, copyId: ctx.params.copyId }, "operator re-sent a recipient's copy");
    ctx.body = await withCopiesOf(em, await submissionRecord(em, view, submission));
  });

  router.get('/submissions', async (ctx) => {
    const query = validate(SubmissionListQuerySchema, { ...ctx.query });
    const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor);
    if (query.cursor !== undefined && !after) throw errors.invalidFields({ cursor: ['Not a cursor of this list.'] });
    const em = ctx.state.em;
    const { page, nextCursor } = await listSubmissions(
      em,
      { keyHash: query.key === undefined ? undefined : deps.vault.hash(query.key), status: query.status, limit: query.limit },
      after,
    );
    ctx.body = { submissions: await withCopies(em, await submissionRecords(em, view, page)), next_cursor: nextCursor };
  });

  router.patch(
    '/keys/:key',
    jsonObjectBody(() => errors.unsupportedMediaType(['application/json'])),
    async (ctx) => {
      const patch = validate(AdminKeyPatchSchema, ctx.request.body);
      const key = await changeKey(
        ctx,
        deps,
        deps.vault.hash(ctx.params.key ?? ''),
        { ...keyChangesOf(patch), domains: patch.domains === undefined ? undefined : parseDomains(patch.domains) },
        patch.recipients,
      );
      const [record] = await keyRecords(ctx.state.em, deps, [key]);
      ctx.body = record;
    },
  );

  return router;
}

/** The operator's key records, each with its added recipients. */
async function keyRecords(em: EntityManager, deps: AppDeps, keys: VerificationKey[]) {
  const recipients = await recipientsOfKeys(
    em,
    keys.map((key) => key.id),
  );
  return keys.map((key) => ({ ...keyRecord(key, deps.vault), recipients: recipients.get(key.id) ?? [] }));
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
