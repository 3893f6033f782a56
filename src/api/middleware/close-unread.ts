// An answer given before the request body was read whole (a 429 from the limiter, a 413, a 415, …)
// closes the connection. Keeping it alive would make Node read and discard the rest of the body,
// so a client trickling a large body would hold the connection long after its refusal.
import type { Middleware } from 'koa';
import type { AppState } from '../context.ts';

export function closeUnreadBody(): Middleware<AppState> {
  return async (ctx, next) => {
    await next();
    if (!ctx.req.complete && !ctx.headerSent) ctx.set('Connection', 'close');
  };
}
