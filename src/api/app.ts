// Builds the Koa app: middleware in the order a request meets it.
import Koa from 'koa';
import type { AppDeps, AppState } from './context.ts';
import { errors } from './errors.ts';
import { errorHandler } from './middleware/errors.ts';
import { requestContext } from './middleware/request-context.ts';
import { adminRoutes } from './routes/admin.ts';
import { healthRoutes } from './routes/health.ts';
import { keyRoutes } from './routes/keys.ts';
import { submissionRoutes } from './routes/submissions.ts';

export function createApp(deps: AppDeps): Koa<AppState> {
  const app = new Koa<AppState>();
  app.silent = true; // errors are logged by errorHandler, with the request id

  app.use(requestContext(deps.log));
  app.use(errorHandler());
  app.use(async (ctx, next) => {
    await next();
    // Nothing answered: a 404 in the spec's error shape rather than Koa's plain text.
    if (ctx.status === 404 && ctx.body == null) throw errors.notFound();
  });
  for (const router of [healthRoutes(deps), keyRoutes(deps), submissionRoutes(deps), adminRoutes(deps)]) {
    app.use(router.routes());
    app.use(router.allowedMethods());
  }
  return app;
}
