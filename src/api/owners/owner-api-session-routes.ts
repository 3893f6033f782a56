// /owner/api/session — the JSON API's session: opened with a sign-in link's token (the JSON twin of
// the link page's button), read (with the CSRF token every write carries in X-CSRF-Token), ended.
import type Router from '@koa/router';
import type { Middleware } from 'koa';
import * as v from 'valibot';
import { consumeSignIn, endSession } from '../../shared/owners/owners.ts';
import type { AppDeps, AppState } from '../context.ts';
import { errors } from '../api-errors.ts';
import { jsonObjectBody } from '../middleware/json-body.ts';
import { createRouter } from '../router.ts';
import { validate } from '../validate.ts';
import { apiGuards, clearedSessionCookie, createCsrf, ownerState, sessionCookie } from './session.ts';

export const SessionRequestSchema = v.object({
  token: v.pipe(v.string('Must be a string.'), v.nonEmpty('Give the token of the sign-in link.'), v.description('The token of the emailed sign-in link')),
});

export function ownerApiSessionRoutes(deps: AppDeps, signInLimiter: Middleware<AppState>): Router<AppState> {
  const router = createRouter('/owner/api');
  const secure = deps.config.PUBLIC_URL.startsWith('https:');
  const csrf = createCsrf(deps.config.SECRET);
  const { sameSite, signedIn, write } = apiGuards(deps);

  router.post(
    '/session',
    sameSite,
    signInLimiter,
    jsonObjectBody(() => errors.unsupportedMediaType(['application/json'])),
    async (ctx) => {
      const { token } = validate(SessionRequestSchema, ctx.request.body);
      const signedIn = await consumeSignIn(ctx.state.em, token);
      if (!signedIn) {
        const message = 'This sign-in link is not valid: used, expired or not one of this service.';
        throw errors.invalidFields({ token: [message] }, message);
      }
      ctx.set('Set-Cookie', sessionCookie(signedIn.cookie, secure));
      ctx.body = { email: signedIn.session.email, expires_at: signedIn.session.expiresAt.toISOString(), csrf_token: csrf.token(signedIn.session) };
    },
  );

  router.get('/session', signedIn, (ctx) => {
    const state = ownerState(ctx);
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { email: state.owner!.email, expires_at: state.owner!.expiresAt.toISOString(), csrf_token: state.csrf! };
  });

  router.delete('/session', ...write, async (ctx) => {
    await endSession(ctx.state.em, ownerState(ctx).owner!.id);
    ctx.set('Set-Cookie', clearedSessionCookie(secure));
    ctx.status = 204;
  });

  return router;
}
