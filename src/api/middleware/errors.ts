// Turns every thrown error into the spec's error body (a broken key rule from src/shared/keys/keys.ts
// included). A body its client broke off is a 400 (broken-body.ts). PostgreSQL (or another service)
// being unreachable is a 503 with Retry-After; unexpected errors become a 500 whose body carries
// only the request id; the log keeps the detail.
import type { Middleware } from 'koa';
import { KeyRuleError } from '../../shared/keys/keys.ts';
import { ApiError, errors, fromKeyRule, renderError } from '../errors.ts';
import { bodyBrokenOff, brokenBodyError } from '../broken-body.ts';
import type { AppState } from '../context.ts';
import { isServiceUnavailable } from '../unavailable.ts';

/** Errors raised by koa-body's readers (raw-body, co-body) carry an HTTP status of their own. */
function fromParserError(error: unknown): ApiError | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const status = (error as { status?: unknown }).status;
  const type = (error as { type?: unknown }).type;
  if (status === 413 || type === 'entity.too.large') return errors.payloadTooLarge('Request body too large.');
  if (status === 415) return errors.unsupportedMediaType(['application/json']);
  if (type === 'entity.parse.failed' || (error instanceof SyntaxError && status === 400)) {
    return errors.malformedBody('not valid JSON.');
  }
  if (typeof status === 'number' && status >= 400 && status < 500) {
    return errors.malformedBody((error as Error).message || 'could not be read.');
  }
  return undefined;
}

export function errorHandler(): Middleware<AppState> {
  return async (ctx, next) => {
    try {
      await next();
    } catch (caught) {
      const error =
        caught instanceof ApiError
          ? caught
          : caught instanceof KeyRuleError
            ? fromKeyRule(caught)
            : // Before the 503 check: a client's reset is ECONNRESET too.
              bodyBrokenOff(ctx.req)
              ? brokenBodyError()
              : isServiceUnavailable(caught)
                ? errors.serviceUnavailable()
                : (fromParserError(caught) ?? errors.internal());
      if (error.status === 503) ctx.state.log.warn({ err: caught }, 'request refused for now');
      else if (error.status >= 500) ctx.state.log.error({ err: caught }, 'request failed');
      else ctx.state.log.info({ errorId: error.id, status: error.status }, 'request rejected');
      ctx.status = error.status;
      ctx.set(error.headers);
      ctx.body = renderError(error, ctx.state.requestId);
    }
  };
}
