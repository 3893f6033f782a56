// GET /metrics: this API process's Prometheus metrics.
import type Router from '@koa/router';
import { createRouter } from '../router.ts';
import { registry } from '../../shared/metrics.ts';
import type { AppState } from '../context.ts';

export function metricsRoutes(): Router<AppState> {
  const router = createRouter();
  router.get('/metrics', async (ctx) => {
    ctx.type = registry.contentType;
    ctx.body = await registry.metrics();
  });
  return router;
}
