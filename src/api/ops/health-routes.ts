// Liveness and readiness: /healthz while the process lives, /readyz when every dependency answers.
import type Router from '@koa/router';
import { createRouter } from '../router.ts';
import { pingDatabase } from '../../shared/infra/db/ping.ts';
import { readBreaker, type BreakerState } from '../../shared/submissions/smtp-breaker-state.ts';
import { withTimeout } from '../../shared/infra/timeout.ts';
import type { AppDeps, AppState } from '../context.ts';
import { buildInfo } from '../../shared/infra/version.ts';

const CHECK_TIMEOUT_MS = 2_000;

export function healthRoutes(deps: AppDeps): Router<AppState> {
  const router = createRouter();

  router.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok' };
  });

  router.get('/readyz', async (ctx) => {
    const checks: Record<string, () => Promise<unknown>> = {
      postgres: () => pingDatabase(deps.orm.em),
      redis: () => deps.redis.ping(),
      storage: () => deps.storage.ping(),
    };
    // Detail only: while the SMTP circuit breaker is open the API still accepts (delivery waits).
    // Named `breaker`: a bare "state: closed" read as a closed connection, the opposite of its meaning.
    const breaker = withTimeout(readBreaker(deps.redis, deps.config.QUEUE_PREFIX), CHECK_TIMEOUT_MS, 'smtp breaker read timed out').then(
      ({ state, ...detail }: BreakerState) => ({ breaker: state, ...detail }),
      () => ({ breaker: 'unknown' as const }),
    );
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
    const smtp = await breaker;
    ctx.status = down.length === 0 ? 200 : 503;
    ctx.body = {
      status: down.length === 0 ? 'ready' : 'unavailable',
      version: buildInfo().version,
      checks: Object.fromEntries(results),
      down,
      delivery: { smtp },
    };
  });

  return router;
}
