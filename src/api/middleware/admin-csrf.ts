// Cross-site request forgery on /admin: a browser that has cached the Basic credentials of the
// queue dashboard sends them with any form another site makes it post here. So a request that can
// change something (every method but GET, HEAD and OPTIONS) must come from this origin:
// `Sec-Fetch-Site: same-origin` (or `none`, typed by the user), or, from browsers that do not send
// Sec-Fetch-Site (they do not over plain http), an `Origin` whose host is this request's `Host`.
// A request with neither header does not come from a browser (curl, scripts) and passes.
import type { Middleware } from 'koa';
import type { AppState } from '../context.ts';
import { ApiError } from '../api-errors.ts';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export type RequestSignals = { method: string; secFetchSite: string; origin: string; host: string };

/** Whether a browser sent this request on behalf of another site's page. */
export function isCrossSiteRequest({ method, secFetchSite, origin, host }: RequestSignals): boolean {
  if (SAFE_METHODS.has(method.toUpperCase())) return false;
  if (secFetchSite) return secFetchSite !== 'same-origin' && secFetchSite !== 'none';
  if (!origin) return false;
  // `Origin: null` (sandboxed frames, cross-site redirects) has no host and never matches.
  return !URL.canParse(origin) || new URL(origin).host !== host.toLowerCase();
}

const MESSAGE = 'Cross-site requests to /admin are refused.';

export function adminCsrf(): Middleware<AppState> {
  return async (ctx, next) => {
    const signals = { method: ctx.method, secFetchSite: ctx.get('Sec-Fetch-Site').toLowerCase(), origin: ctx.get('Origin'), host: ctx.get('Host') };
    if (isCrossSiteRequest(signals)) throw new ApiError(403, 'cross_site_request', MESSAGE, { __all__: [MESSAGE] });
    await next();
  };
}
