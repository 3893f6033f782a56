// Gives each request an id (X-Request-Id in and out) and a logger that carries it, made when first used.
import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';
import type { Logger } from '../../shared/infra/log.ts';
import { httpRequestDuration } from '../../shared/infra/metrics.ts';
import type { ClientIpResolver } from '../client-ip.ts';
import type { AppState } from '../context.ts';
import { redactPath, redactQuery } from '../redact.ts';

const INCOMING_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export function requestContext(log: Logger, clientIp: ClientIpResolver): Middleware<AppState> {
  return async (ctx, next) => {
    const incoming = ctx.get('X-Request-Id');
    const requestId = INCOMING_ID.test(incoming) ? incoming : randomUUID();
    ctx.state.requestId = requestId;
    // Made when the request first logs: most requests log nothing at the usual level.
    let requestLog: Logger | undefined;
    Object.defineProperty(ctx.state, 'log', { get: () => (requestLog ??= log.child({ requestId })), enumerable: true, configurable: true });
    ctx.state.clientIp = clientIp(ctx.req.socket.remoteAddress ?? '', ctx.get('X-Forwarded-For') || undefined);
    ctx.set('X-Request-Id', ctx.state.requestId);
    // No response of this service is meant to be sniffed into another type.
    ctx.set('X-Content-Type-Options', 'nosniff');
    const started = performance.now();
    try {
      await next();
    } finally {
      const seconds = (performance.now() - started) / 1000;
      // The route pattern, not the path: ids in paths would make unbounded label values.
      const route = (ctx as { _matchedRoute?: string })._matchedRoute ?? 'unmatched';
      httpRequestDuration.observe({ method: ctx.method, route, status: String(ctx.status) }, seconds);
      if (log.isLevelEnabled('debug')) {
        // Keys travel in some admin paths and queries: never into the log.
        const query = ctx.querystring ? redactQuery(ctx.querystring) : undefined;
        ctx.state.log.debug({ method: ctx.method, path: redactPath(ctx.path), query, status: ctx.status, ms: Math.round(seconds * 1000) }, 'request');
      }
    }
  };
}
