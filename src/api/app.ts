// Builds the Koa app: middleware in the order a request meets it.
import Koa from 'koa';
import type { AppDeps, AppState } from './context.ts';
import { errorHandler } from './middleware/errors.ts';
import { requestContext } from './middleware/request-context.ts';
import { healthRoutes } from './routes/health.ts';
import { submissionRoutes } from './routes/submissions.ts';

export function createApp(deps: AppDeps): Koa<AppState> {
  const app = new Koa<AppState>();
  app.silent = true; // errors are logged by errorHandler, with the request id

  app.use(requestContext(deps.log));
  app.use(errorHandler());
  for (const router of [healthRoutes(deps), submissionRoutes(deps)]) {
    app.use(router.routes());
    app.use(router.allowedMethods());
  }
  return app;
}
