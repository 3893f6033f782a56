// POST /api/contact-api/ — what happens to a submission, in order:
// parse → validate → authenticate → store → enqueue → respond.
import { randomUUID } from 'node:crypto';
import Router from '@koa/router';
import { koaBody } from 'koa-body';
import { findActiveKey } from '../../shared/keys.ts';
import { enqueueDeliveryFast, submissionJob } from '../../shared/queue.ts';
import type { AppDeps, AppState } from '../context.ts';
import { errors } from '../errors.ts';
import { parseSubmissionFields, type RawFields } from '../submissions/input.ts';
import { saveSubmission } from '../submissions/store.ts';

const JSON_TYPES = ['application/json'];

export function submissionRoutes(deps: AppDeps): Router<AppState> {
  const router = new Router<AppState>();

  router.post(
    '/api/contact-api/',
    requireContentType(JSON_TYPES),
    koaBody({ json: true, jsonLimit: '1mb', jsonStrict: true, urlencoded: false, multipart: false, text: false }),
    async (ctx) => {
      const fields = bodyFields(ctx.request.body);
      const input = parseSubmissionFields(fields);

      const em = deps.orm.em.fork();
      const key = await findActiveKey(em, input.accessKey);
      if (!key) throw errors.invalidKey();

      const submission = await saveSubmission(em, {
        id: randomUUID(),
        key,
        input,
        files: [],
        clientIp: ctx.state.clientIp,
        origin: ctx.get('Origin') || ctx.get('Referer') || undefined,
      });

      if (submission.emailStatus === 'queued') {
        // The row is committed: if Redis fails now, the reconciler enqueues it later.
        await enqueueDeliveryFast(deps.queue, deps.redis, submissionJob(submission.id)).catch((error: unknown) =>
          ctx.state.log.warn({ err: error, submissionId: submission.id }, 'enqueue failed; left for the reconciler'),
        );
      }

      ctx.body = {
        success: true,
        message: 'Message sent successfully.',
        submission_id: submission.id,
        attachments: 0,
        email_status: submission.emailStatus,
      };
    },
  );

  return router;
}

function requireContentType(types: string[]) {
  return async (ctx: { is: (types: string[]) => string | false | null }, next: () => Promise<unknown>) => {
    if (!ctx.is(types)) throw errors.unsupportedMediaType(types);
    await next();
  };
}

/** A JSON body must be an object; its entries are the fields in arrival order. */
function bodyFields(body: unknown): RawFields {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw errors.malformedBody('expected a JSON object.');
  }
  return Object.entries(body);
}
