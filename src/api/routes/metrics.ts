// GET /metrics: this API process's Prometheus metrics.
import Router from '@koa/router';
import { registry } from '../../shared/metrics.ts';
import type { AppState } from '../context.ts';

export function metricsRoutes(): Router<AppState> {
  const router = new Router<AppState>();
  router.get('/metrics', async (ctx) => {
    ctx.type = registry.contentType;
    ctx.body = await registry.metrics();
  });
  return router;
}
