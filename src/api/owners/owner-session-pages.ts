// /owner, /owner/sign-in, /owner/link, /owner/sign-out — the owner console's way in and out: an
// address asks for a sign-in link, the emailed link opens a session (a cookie), signing out ends it.
import type Router from '@koa/router';
import type { Middleware } from 'koa';
import * as v from 'valibot';
import { consumeSignIn, endSession, findSession, requestSignIn, SESSION_TTL_DAYS, SIGN_IN_LINK_TTL_MINUTES } from '../../shared/owners/owners.ts';
import { keyEmailJob } from '../../shared/deliveries/delivery-jobs.ts';
import type { AppDeps, AppState } from '../context.ts';
import { errors } from '../api-errors.ts';
import { refusalsAsPage } from '../middleware/error-handler.ts';
import { bodyText, FORM_TYPE, parseJsonObject, readBodyText } from '../middleware/json-body.ts';
import { createRouter } from '../router.ts';
import { enqueueCommitted } from '../submissions/enqueue.ts';
import { validate } from '../validate.ts';
import { renderPage } from '../view.ts';
import { noticeOf, pageGuards, see } from './owner-pages.ts';
import { clearedSessionCookie, formBody, ownerState, SESSION_COOKIE, sessionCookie } from './session.ts';

export const OwnerSignInSchema = v.object({
  email: v.pipe(
    v.string('Must be a string.'),
    v.trim(),
    v.nonEmpty('Enter your email address.'),
    v.maxLength(254, 'Must be at most 254 characters.'),
    v.email('Enter a valid email address.'),
    v.description('The address that holds the keys'),
  ),
});

/** The one answer to a sign-in request, whatever the address holds. */
export const signInAnswer = (email: string) =>
  `If ${email} holds keys, a sign-in link is on its way to it. The link works once, for ${SIGN_IN_LINK_TTL_MINUTES} minutes.`;

const SIGN_IN_PAGE = { link_minutes: SIGN_IN_LINK_TTL_MINUTES, session_days: SESSION_TTL_DAYS, sent: false, email: '', error: '', notice: '' };

export function ownerSessionPages(deps: AppDeps, limiters: { mail: Middleware<AppState>; signIn: Middleware<AppState> }): Router<AppState> {
  const router = createRouter();
  const secure = deps.config.PUBLIC_URL.startsWith('https:');
  const { sameSite, write } = pageGuards(deps);
  router.use(refusalsAsPage('owner-error'));

  router.get('/owner', async (ctx) => {
    const cookie = ctx.cookies.get(SESSION_COOKIE);
    if (cookie && (await findSession(ctx.state.em, cookie))) return see(ctx, '/owner/keys');
    renderPage(ctx, 'owner-sign-in', { ...SIGN_IN_PAGE, notice: noticeOf(ctx) });
  });

  // An HTML form and JSON alike; the answer is the same whether or not the address holds keys.
  router.post('/owner/sign-in', sameSite, limiters.mail, async (ctx) => {
    const isForm = ctx.is(FORM_TYPE) === FORM_TYPE;
    if (!isForm && !ctx.is('application/json')) throw errors.unsupportedMediaType(['application/json', FORM_TYPE]);
    await readBodyText(ctx, async () => undefined);
    const text = bodyText(ctx.request);
    const formEmail = isForm ? (new URLSearchParams(text).get('email') ?? '') : '';
    const body = isForm ? { email: formEmail } : parseJsonObject(text);
    let email: string;
    try {
      email = validate(OwnerSignInSchema, { email: body.email ?? '' }).email.toLowerCase();
    } catch (error) {
      if (!isForm) throw error;
      const message = (error as { errors?: Record<string, string[]> }).errors?.email?.[0] ?? 'Enter a valid email address.';
      return renderPage(ctx, 'owner-sign-in', { ...SIGN_IN_PAGE, email: formEmail.slice(0, 254), error: message }, { status: 400 });
    }
    const keyEmailId = await requestSignIn(ctx.state.em, deps.vault, { email, emailsPerHour: deps.config.SIGN_IN_EMAILS_PER_HOUR });
    if (keyEmailId) await enqueueCommitted(ctx, deps, keyEmailJob(keyEmailId, ctx.state.requestId));
    if (isForm) return renderPage(ctx, 'owner-sign-in', { ...SIGN_IN_PAGE, sent: true, email });
    ctx.body = { success: true, message: signInAnswer(email) };
  });

  // Mail scanners open links: the GET only shows a button; the POST uses the link.
  router.get('/owner/link', (ctx) => {
    const token = typeof ctx.query.token === 'string' ? ctx.query.token.slice(0, 100) : '';
    if (!token) return renderPage(ctx, 'owner-link-invalid', { link_minutes: SIGN_IN_LINK_TTL_MINUTES }, { status: 400 });
    renderPage(ctx, 'owner-link', { token });
  });

  router.post('/owner/link', sameSite, limiters.signIn, formBody, async (ctx) => {
    const signedIn = await consumeSignIn(ctx.state.em, ownerState(ctx).form?.get('token') ?? '');
    if (!signedIn) return renderPage(ctx, 'owner-link-invalid', { link_minutes: SIGN_IN_LINK_TTL_MINUTES }, { status: 400 });
    ctx.set('Set-Cookie', sessionCookie(signedIn.cookie, secure));
    ctx.state.log.info({ session: signedIn.session.id }, 'owner signed in');
    see(ctx, '/owner/keys');
  });

  router.post('/owner/sign-out', ...write, async (ctx) => {
    await endSession(ctx.state.em, ownerState(ctx).owner!.id);
    ctx.set('Set-Cookie', clearedSessionCookie(secure));
    see(ctx, '/owner?notice=signed-out');
  });

  return router;
}
