// The span of each request, the root of its trace (docs/operations.md#traces); the jobs it queues
// carry its context to the workers. Named by the route's pattern, never the path: keys travel in paths.
import type { Middleware } from 'koa';
import { serverSpan, tracingOn } from '../../shared/infra/tracing.ts';
import type { AppState } from '../context.ts';

/** The middleware, or undefined when tracing is off: the app then adds nothing to a request's way. */
export function requestTrace(): Middleware<AppState> | undefined {
  if (!tracingOn()) return undefined;
  return (ctx, next) =>
    serverSpan(ctx.method, { 'http.request.method': ctx.method }, async (span) => {
      try {
        await next();
      } finally {
        const route = (ctx as { _matchedRoute?: string })._matchedRoute;
        span.update(route === undefined ? undefined : `${ctx.method} ${route}`, {
          'http.route': route,
          'http.response.status_code': ctx.status,
          'cfs.request_id': ctx.state.requestId,
        });
        if (ctx.status >= 500) span.fail(`answered ${ctx.status}`);
      }
    });
}
