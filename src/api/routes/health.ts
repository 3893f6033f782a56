// Liveness and readiness: /healthz while the process lives, /readyz when every dependency answers.
import type Router from '@koa/router';
import { createRouter } from '../router.ts';
import { withTimeout } from '../../shared/timeout.ts';
import type { AppDeps, AppState } from '../context.ts';

const CHECK_TIMEOUT_MS = 2_000;


export function healthRoutes(deps: AppDeps): Router<AppState> {
  const router = createRouter();

  router.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok' };
  });

  router.get('/readyz', async (ctx) => {
    const checks: Record<string, () => Promise<unknown>> = {
      postgres: () => deps.orm.em.getConnection().execute('select 1'),
      redis: () => deps.redis.ping(),
      storage: () => deps.storage.ping(),
    };
    const results = await Promise.all(
      Object.entries(checks).map(async ([name, check]) => {
        try {
          await withTimeout(check(), CHECK_TIMEOUT_MS, `${name} check timed out`);
          return [name, 'ok'] as const;
        } catch (error) {
          ctx.state.log.warn({ err: error, dependency: name }, 'readiness check failed');
          return [name, 'down'] as const;
        }
      }),
    );
    const down = results.filter(([, state]) => state === 'down').map(([name]) => name);
    ctx.status = down.length === 0 ? 200 : 503;
    ctx.body = { status: down.length === 0 ? 'ready' : 'unavailable', checks: Object.fromEntries(results), down };
  });

  return router;
}
