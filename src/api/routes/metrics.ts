// GET /metrics: this API process's Prometheus metrics, behind the admin token like /admin: they
// show open files, queue depths and traffic per route, which are the operator's business only.
import Router from '@koa/router';
import { registry } from '../../shared/metrics.ts';
import type { AppDeps, AppState } from '../context.ts';
import { adminAuth } from '../middleware/admin-auth.ts';

export function metricsRoutes(deps: AppDeps): Router<AppState> {
  const router = new Router<AppState>();
  router.get('/metrics', adminAuth(deps.config.ADMIN_TOKEN), async (ctx) => {
    ctx.type = registry.contentType;
    ctx.body = await registry.metrics();
  });
  return router;
}
