// The operator API's part of a visitor's data on request (docs/operations.md, "A visitor's data on
// request"): GET /admin/visitors/export streams the JSON document, POST /admin/visitors/erase
// streams the erasure's progress as JSON lines, the summary last. Both work in batches; an erasure
// goes on to its end when the client leaves, and a second one finds what an interrupted one left.
import { PassThrough } from 'node:stream';
import type Router from '@koa/router';
import * as v from 'valibot';
import { eraseVisitor, exportVisitor, type VisitorDeps } from '../../shared/visitors/visitors.ts';
import { errors } from '../api-errors.ts';
import type { AppDeps, AppState } from '../context.ts';
import { takeExport } from '../heavy-reads.ts';
import { jsonObjectBody } from '../middleware/json-body.ts';
import { createRouter } from '../router.ts';
import { validate } from '../validate.ts';

const Address = v.pipe(v.string('Give the address.'), v.trim(), v.maxLength(254, 'At most 254 characters.'), v.email('Enter a valid email address.'));
const VisitorQuerySchema = v.object({ email: Address });
export const VisitorEraseSchema = v.strictObject({ email: v.pipe(Address, v.description("The visitor's address")) }, 'Only email can be given.');

export function visitorRoutes(deps: AppDeps): Router<AppState> {
  const router = createRouter('/admin/visitors');
  // Each request reads and deletes on a unit of work of its own: the body streams after the handler returns.
  const visitorDeps = (): VisitorDeps => ({
    em: deps.orm.em.fork(),
    storage: deps.storage,
    queues: [deps.queue, deps.webhookQueue],
    erasedForm: deps.erasedForm,
  });
  const needRedis = () => {
    if (deps.redis.status !== 'ready')
      throw errors.unavailable('The queue (Redis) cannot be reached: its jobs could not be looked at. Try again once it is back.');
  };

  router.get('/export', async (ctx) => {
    const { email } = validate(VisitorQuerySchema, { email: ctx.query.email });
    needRedis();
    const release = takeExport(deps, undefined);
    const body = new PassThrough();
    ctx.type = 'application/json; charset=utf-8';
    ctx.attachment('visitor-export.json');
    ctx.body = body;
    const log = ctx.state.log;
    exportVisitor(visitorDeps(), email, body)
      .then(() => body.end())
      .catch((error: unknown) => {
        // Cut short: the document does not parse, so it cannot pass for a whole one.
        log.error({ err: error }, 'visitor export failed');
        body.destroy(error instanceof Error ? error : new Error(String(error)));
      })
      .finally(release);
  });

  router.post(
    '/erase',
    jsonObjectBody(() => errors.unsupportedMediaType(['application/json'])),
    async (ctx) => {
      const { email } = validate(VisitorEraseSchema, ctx.request.body);
      needRedis();
      const body = new PassThrough();
      ctx.type = 'application/x-ndjson; charset=utf-8';
      ctx.body = body;
      const log = ctx.state.log;
      const line = (value: unknown) => {
        if (body.writable) body.write(`${JSON.stringify(value)}\n`);
      };
      eraseVisitor(visitorDeps(), email, line)
        .then((summary) => {
          log.info({ submissions: summary.submissions, jobs: summary.jobs_removed }, 'operator erased a visitor address');
          line({ done: true, summary });
        })
        .catch((error: unknown) => {
          log.error({ err: error }, 'visitor erasure failed');
          line({ done: false, error: 'The erasure stopped before its end: run it again (it continues where it stopped).' });
        })
        .finally(() => body.end());
    },
  );
  return router;
}
