// Builds the Koa app: middleware in the order a request meets it.
import Koa from 'koa';
import { clientIpResolver } from './client-ip.ts';
import type { AppDeps, AppState } from './context.ts';
import { errors } from './errors.ts';
import { closeUnreadBody } from './middleware/close-unread.ts';
import { errorHandler } from './middleware/errors.ts';
import { rateLimit } from './middleware/rate-limit.ts';
import { queueBoard } from './queue-board.ts';
import { requestContext } from './middleware/request-context.ts';
import { adminRoutes } from './routes/admin.ts';
import { docsRoutes } from './routes/docs.ts';
import { healthRoutes } from './routes/health.ts';
import { keyRoutes } from './routes/keys.ts';
import { metricsRoutes } from './routes/metrics.ts';
import { pageRoutes } from './routes/pages.ts';
import { submissionRoutes } from './routes/submissions.ts';

export function createApp(deps: AppDeps): Koa<AppState> {
  const app = new Koa<AppState>();
  app.silent = true; // errors are logged by errorHandler, with the request id

  app.use(requestContext(deps.log, clientIpResolver(deps.config.TRUST_PROXY)));
  app.use(closeUnreadBody()); // outside errorHandler: sees the status it sets
  app.use(errorHandler());
  app.use(async (ctx, next) => {
    await next();
    // Nothing answered: a 404 in the spec's error shape rather than Koa's plain text.
    if (ctx.status === 404 && ctx.body == null) throw errors.notFound();
  });
  // One limiter for both public POST endpoints: a client's requests count together.
  const limiter = rateLimit({
    redis: deps.redis,
    prefix: deps.config.QUEUE_PREFIX,
    windowMs: deps.config.RATE_LIMIT_WINDOW_MS,
    max: deps.config.RATE_LIMIT_MAX,
  });
  const routers = [
    healthRoutes(deps),
    metricsRoutes(),
    docsRoutes(deps),
    pageRoutes(deps),
    keyRoutes(deps, limiter),
    submissionRoutes(deps, limiter),
    adminRoutes(deps),
  ];
  for (const router of routers) {
    app.use(router.routes());
    app.use(router.allowedMethods());
  }
  app.use(queueBoard(deps));
  return app;
}
