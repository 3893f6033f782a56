// Builds the Koa app: middleware in the order a request meets it.
import type Router from '@koa/router';
import Koa from 'koa';
import { clientIpResolver } from './client-ip.ts';
import type { AppDeps, AppState } from './context.ts';
import { errors } from './api-errors.ts';
import { adminGuard } from './middleware/admin-auth.ts';
import { closeUnreadBody } from './middleware/close-unread.ts';
import { errorHandler } from './middleware/error-handler.ts';
import { rateLimit } from './middleware/rate-limit.ts';
import { queueBoard } from './admin/queue-board.ts';
import { requestContext } from './middleware/request-context.ts';
import { requestEm } from './middleware/request-em.ts';
import { requestTrace } from './middleware/request-trace.ts';
import { registeredRoutes } from './router.ts';
import { adminRoutes } from './admin/admin-routes.ts';
import { visitorRoutes } from './admin/visitor-routes.ts';
import { adminWebhookApiRoutes, ownerWebhookApiRoutes } from './webhooks/webhook-api-routes.ts';
import { ownerWebhookRoutes } from './webhooks/owner-webhook-routes.ts';
import { confirmRoutes } from './keys/confirm-routes.ts';
import { docsRoutes } from './site/docs-routes.ts';
import { healthRoutes } from './ops/health-routes.ts';
import { keyRoutes } from './keys/key-routes.ts';
import { metricsRoutes } from './ops/metrics-routes.ts';
import { ownerApiKeyRoutes } from './owners/owner-api-key-routes.ts';
import { ownerApiSessionRoutes } from './owners/owner-api-session-routes.ts';
import { ownerApiSubmissionRoutes } from './owners/owner-api-submission-routes.ts';
import { ownerKeyPages } from './owners/owner-key-pages.ts';
import { ownerSessionPages } from './owners/owner-session-pages.ts';
import { ownerSubmissionPages } from './owners/owner-submission-pages.ts';
import { pageRoutes } from './site/page-routes.ts';
import { submissionRoutes } from './submissions/submission-routes.ts';
import { altchaRoutes } from './submissions/altcha-routes.ts';
import { createAltcha } from './submissions/altcha.ts';

export function createApp(deps: AppDeps): Koa<AppState> {
  const app = new Koa<AppState>();
  app.silent = true; // errors are logged by errorHandler, with the request id

  const tracing = requestTrace(); // none unless tracing is on: no cost per request
  if (tracing) app.use(tracing);
  app.use(requestContext(deps.log, clientIpResolver(deps.config.TRUST_PROXY)));
  app.use(requestEm(deps.orm));
  app.use(closeUnreadBody()); // outside errorHandler: sees the status it sets
  app.use(errorHandler());
  app.use(async (ctx, next) => {
    await next();
    // Nothing answered: a 404 in the spec's error shape rather than Koa's plain text.
    if (ctx.status === 404 && ctx.body == null) throw errors.notFound();
  });
  // Before every router: the admin surface is authenticated in whatever spelling its path arrives.
  app.use(adminGuard(deps.config.ADMIN_TOKEN));
  // One limiter for the public POSTs that send mail or create something: a client's requests count together.
  const limiter = rateLimit({
    redis: deps.redis,
    prefix: deps.config.QUEUE_PREFIX,
    windowMs: deps.config.RATE_LIMIT_WINDOW_MS,
    max: deps.config.RATE_LIMIT_MAX,
    ipv6Prefix: deps.config.RATE_LIMIT_IPV6_PREFIX,
  });
  // Using a sign-in link counts apart, so that the owner's own form does not spend it.
  const signInLimiter = rateLimit({
    redis: deps.redis,
    prefix: `${deps.config.QUEUE_PREFIX}:sign-in`,
    windowMs: 60_000,
    max: deps.config.SIGN_IN_LINK_USES_PER_MINUTE,
    ipv6Prefix: deps.config.RATE_LIMIT_IPV6_PREFIX,
  });
  // The ALTCHA challenges a form's page fetches count apart, with the same figures: a widget
  // fetches one per submission, so its visitor never needs more, and a challenge fetched just
  // before its form is sent does not spend that submission's turn (one per 3 s by default).
  const challengeLimiter = rateLimit({
    redis: deps.redis,
    prefix: `${deps.config.QUEUE_PREFIX}:altcha-challenge`,
    windowMs: deps.config.RATE_LIMIT_WINDOW_MS,
    max: deps.config.RATE_LIMIT_MAX,
    ipv6Prefix: deps.config.RATE_LIMIT_IPV6_PREFIX,
  });
  const altcha = createAltcha({
    secret: deps.config.SECRET,
    maxCounter: deps.config.ALTCHA_MAX_COUNTER,
    redis: deps.redis,
    prefix: deps.config.QUEUE_PREFIX,
  });
  const routers: Array<Router<AppState>> = [];
  const submissions = submissionRoutes(deps, limiter, altcha);
  routers.push(
    healthRoutes(deps),
    metricsRoutes(deps),
    docsRoutes(deps, () => registeredRoutes(routers)),
    pageRoutes(deps),
    keyRoutes(deps, limiter),
    submissions,
    altchaRoutes(deps, altcha, challengeLimiter),
    confirmRoutes(deps, limiter),
    ownerSessionPages(deps, { mail: limiter, signIn: signInLimiter }),
    ownerKeyPages(deps),
    ownerSubmissionPages(deps),
    ownerWebhookRoutes(deps),
    ownerApiSessionRoutes(deps, signInLimiter),
    ownerApiKeyRoutes(deps),
    ownerApiSubmissionRoutes(deps),
    ownerWebhookApiRoutes(deps),
    adminRoutes(deps),
    visitorRoutes(deps),
    adminWebhookApiRoutes(deps),
  );
  // The submissions' router first: the busiest path meets no other router's matching on its way.
  for (const router of [submissions, ...routers.filter((router) => router !== submissions)]) {
    app.use(router.routes());
    app.use(router.allowedMethods());
  }
  app.use(queueBoard(deps));
  return app;
}
