// Turns every thrown error into the spec's error body (a broken key rule from src/shared/keys/keys.ts
// included), or, on the routes that ask for it (refusalsAsPage), a refusal into a page. A body its client broke off is a 400 (broken-body.ts). PostgreSQL (or another service)
// being unreachable is a 503 with Retry-After; unexpected errors become a 500 whose body carries
// only the request id; the log keeps the detail.
import type { Middleware } from 'koa';
import { KeyRuleError } from '../../shared/keys/keys.ts';
import { ApiError, errors, fromKeyRule, renderError } from '../api-errors.ts';
import { bodyBrokenOff, brokenBodyError } from '../broken-body.ts';
import type { AppContext, AppState } from '../context.ts';
import { isServiceUnavailable } from '../unavailable.ts';
import { renderPage } from '../view.ts';

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

/** The one mapping of anything thrown to its error value. */
function errorOf(caught: unknown, ctx: AppContext): ApiError {
  if (caught instanceof ApiError) return caught;
  if (caught instanceof KeyRuleError) return fromKeyRule(caught);
  // Before the 503 check: a client's reset is ECONNRESET too.
  if (bodyBrokenOff(ctx.req)) return brokenBodyError();
  if (isServiceUnavailable(caught)) return errors.serviceUnavailable();
  return fromParserError(caught) ?? errors.internal();
}

/**
 * On a router of pages: a browser's form gets a refusal (cross-site, rate limit, a bad request) as
 * this page; JSON asks, and failures of the service (5xx), still get the error body.
 */
export function refusalsAsPage(view: string): Middleware<AppState> {
  return async (ctx, next) => {
    ctx.state.errorPage = view;
    await next();
  };
}

/** A bad field says which and why: "from: Give a date as YYYY-MM-DD." */
function pageMessage(error: ApiError): string {
  const fields = Object.entries(error.errors).filter(([name]) => name !== '__all__');
  return fields.length ? fields.map(([name, messages]) => `${name}: ${messages.join(' ')}`).join(' ') : error.message;
}

export function errorHandler(): Middleware<AppState> {
  return async (ctx, next) => {
    try {
      await next();
    } catch (caught) {
      const error = errorOf(caught, ctx);
      if (error.status === 503) ctx.state.log.warn({ err: caught }, 'request refused for now');
      else if (error.status >= 500) ctx.state.log.error({ err: caught }, 'request failed');
      else ctx.state.log.info({ errorId: error.id, status: error.status }, 'request rejected');
      ctx.set(error.headers);
      if (ctx.state.errorPage && error.status < 500 && !ctx.is('application/json')) {
        return renderPage(ctx, ctx.state.errorPage, { message: pageMessage(error) }, { status: error.status });
      }
      ctx.status = error.status;
      ctx.body = renderError(error, ctx.state.requestId);
    }
  };
}
