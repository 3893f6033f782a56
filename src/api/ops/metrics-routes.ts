// GET /metrics: this API process's Prometheus metrics, behind the admin token like /admin: they
// show open files, queue depths and traffic per route, which are the operator's business only.
import type Router from '@koa/router';
import { createRouter } from '../router.ts';
import { registry } from '../../shared/infra/metrics.ts';
import type { AppDeps, AppState } from '../context.ts';
import { requireAdminToken } from '../middleware/admin-auth.ts';

export function metricsRoutes(deps: AppDeps): Router<AppState> {
  const router = createRouter();
  router.get('/metrics', requireAdminToken(deps.config.ADMIN_TOKEN), async (ctx) => {
    ctx.type = registry.contentType;
    ctx.body = await registry.metrics();
  });
  return router;
}
