// The owner console's session and request checks: the session cookie, the refusal of cross-site
// writes (Origin / Sec-Fetch-Site), and the CSRF token every state-changing request with a session
// carries (a hidden form field, or the X-CSRF-Token header for the JSON API).
import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import type { Middleware } from 'koa';
import type { OwnerSession } from '../../shared/owners/entities.ts';
import { findSession, SESSION_TTL_DAYS } from '../../shared/owners/owners.ts';
import type { AppContext, AppDeps, AppState } from '../context.ts';
import { ApiError } from '../api-errors.ts';
import { bodyText, FORM_TYPE, parseJsonObject, readBodyText } from '../middleware/json-body.ts';

export const SESSION_COOKIE = 'owner_session';
const COOKIE_PATH = '/owner';
export const CSRF_FIELD = 'csrf_token';
export const CSRF_HEADER = 'x-csrf-token';

/** What the owner middleware leaves on ctx.state. */
export type OwnerState = AppState & {
  owner?: OwnerSession;
  csrf?: string;
  form?: URLSearchParams;
  json?: Record<string, unknown>;
  /** The session's key named in the path, once found. */
  keyId?: string;
};
export const ownerState = (ctx: AppContext) => ctx.state as OwnerState;

export function sessionCookie(value: string, secure: boolean): string {
  return `${SESSION_COOKIE}=${value}; Path=${COOKIE_PATH}; Max-Age=${SESSION_TTL_DAYS * 86_400}; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;
}
export const clearedSessionCookie = (secure: boolean) =>
  `${SESSION_COOKIE}=; Path=${COOKIE_PATH}; Max-Age=0; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;

export const crossSiteRefused = () => new ApiError(403, 'cross_site', 'Cross-site request refused.', { __all__: ['Cross-site request refused.'] });
const csrfRefused = () =>
  new ApiError(403, 'csrf', 'Missing or wrong CSRF token. Reload the page and try again.', {
    __all__: ['Missing or wrong CSRF token. Reload the page and try again.'],
  });

/**
 * Refuses a write that a browser says comes from another site. Browsers that send Sec-Fetch-Site
 * (a header pages cannot set) are believed: only same-origin (or none: typed by the user) passes.
 * Others are judged by Origin, which must be this request's origin or PUBLIC_URL's; the pages'
 * no-referrer policy makes such browsers send `Origin: null` from this origin too, and that is
 * refused (fail closed). Clients that send neither header (curl, scripts) pass: they carry no
 * victim's cookie.
 */
export function crossSiteGuard(publicUrl: string): Middleware<AppState> {
  const publicOrigin = new URL(publicUrl).origin;
  return async (ctx, next) => {
    const site = ctx.get('sec-fetch-site');
    const origin = ctx.get('origin');
    if (site) {
      if (site !== 'same-origin' && site !== 'none') throw crossSiteRefused();
    } else if (origin && origin !== publicOrigin && origin !== `${ctx.protocol}://${ctx.host}`) {
      throw crossSiteRefused();
    }
    await next();
  };
}

/** The CSRF token of a session: an HMAC of its id under a key derived from SECRET. */
export function createCsrf(secret: string) {
  const key = Buffer.from(hkdfSync('sha256', secret, 'contact-form-service', 'owner csrf', 32));
  const token = (session: OwnerSession) => createHmac('sha256', key).update(session.id).digest('base64url');
  return {
    token,
    verify(session: OwnerSession, given: string | undefined) {
      const expected = Buffer.from(token(session));
      const presented = Buffer.from(given ?? '');
      return presented.length === expected.length && timingSafeEqual(presented, expected);
    },
  };
}

/**
 * Loads the session of the cookie. Without one: pages redirect to the sign-in page, the JSON API
 * answers 401.
 */
export function requireOwner(deps: Pick<AppDeps, 'config'>, mode: 'page' | 'api'): Middleware<AppState> {
  const csrf = createCsrf(deps.config.SECRET);
  return async (ctx, next) => {
    const cookie = ctx.cookies.get(SESSION_COOKIE) ?? '';
    const session = cookie ? await findSession(ctx.state.em, cookie) : undefined;
    if (!session) {
      if (mode === 'api') {
        throw new ApiError(401, 'unauthorized', 'Sign in first: POST /owner/sign-in.', { __all__: ['Sign in first.'] });
      }
      ctx.redirect('/owner');
      ctx.status = 303;
      return;
    }
    const state = ownerState(ctx);
    state.owner = session;
    state.csrf = csrf.token(session);
    await next();
  };
}

/** Reads an urlencoded form body into ctx.state.form (pages' writes). */
export const formBody: Middleware<AppState> = async (ctx, next) => {
  if (!ctx.is(FORM_TYPE)) throw new ApiError(415, 'unsupported_media_type', `Use ${FORM_TYPE}.`, { __all__: [`Use ${FORM_TYPE}.`] });
  await readBodyText(ctx, async () => undefined);
  ownerState(ctx).form = new URLSearchParams(bodyText(ctx.request));
  await next();
};

/** Reads an optional JSON object body into ctx.state.json (API writes). */
export const optionalJsonBody: Middleware<AppState> = async (ctx, next) => {
  if (ctx.request.length || ctx.get('transfer-encoding')) {
    if (!ctx.is('application/json')) throw new ApiError(415, 'unsupported_media_type', 'Use application/json.', { __all__: ['Use application/json.'] });
    await readBodyText(ctx, async () => undefined);
    ownerState(ctx).json = parseJsonObject(bodyText(ctx.request));
  } else ownerState(ctx).json = {};
  await next();
};

/** After requireOwner (and formBody for pages): the request carries the session's CSRF token. */
export function csrfGuard(secret: string): Middleware<AppState> {
  const csrf = createCsrf(secret);
  return async (ctx, next) => {
    const state = ownerState(ctx);
    const given = state.form?.get(CSRF_FIELD) ?? ctx.get(CSRF_HEADER);
    if (!state.owner || !csrf.verify(state.owner, given || undefined)) throw csrfRefused();
    await next();
  };
}

/** The guards of the JSON API: a read needs a session; a write also a same-site request with the CSRF token. */
export function apiGuards(deps: Pick<AppDeps, 'config'>): {
  sameSite: Middleware<AppState>;
  signedIn: Middleware<AppState>;
  write: Array<Middleware<AppState>>;
} {
  const sameSite = crossSiteGuard(deps.config.PUBLIC_URL);
  const signedIn = requireOwner(deps, 'api');
  return { sameSite, signedIn, write: [sameSite, signedIn, csrfGuard(deps.config.SECRET)] };
}

/** The signed-in address, after requireOwner. */
export const ownerEmail = (ctx: AppContext) => ownerState(ctx).owner!.email;
