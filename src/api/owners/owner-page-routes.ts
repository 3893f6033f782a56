// /owner — the owner console's pages: sign in by an emailed link, then the keys of the
// signed-in address, their settings, each key's messages as a list to search and filter, and each
// message on a page of its own with its delivery status and actions.
// Server-rendered and working without JavaScript; every write is a form POST that checks the
// origin and the session's CSRF token, then redirects (303) to a page that shows the result.
import type Router from '@koa/router';
import type { Middleware } from 'koa';
import * as v from 'valibot';
import {
  CAPTCHA_PROVIDERS,
  EMAIL_STATUSES,
  SPAM_FILTER_LEVELS,
  type CaptchaProvider,
  type EmailStatus,
  type SpamFilterLevel,
} from '../../shared/infra/db/entities.ts';
import { markSubmission } from './spam-marks.ts';
import { RESENDABLE } from '../../shared/submissions/delivery-statuses.ts';
import { consumeSignIn, endSession, findSession, requestSignIn, SESSION_TTL_DAYS, SIGN_IN_LINK_TTL_MINUTES } from '../../shared/owners/owners.ts';
import { KEY_LABEL_MAX, KeyRuleError } from '../../shared/keys/keys.ts';
import { defaultSubject } from '../../shared/submissions/submissions.ts';
import { filterQuery, isFiltered, ListFilterSchema } from './filters.ts';
import { ago, previewOf, utc } from './times.ts';
import { barChart, OUTCOME_WORDS } from './chart.ts';
import { OUTCOMES } from '../../shared/owners/overview.ts';
import { keyEmailJob } from '../../shared/submissions/delivery-jobs.ts';
import type { AppContext, AppDeps, AppState, RouteContext } from '../context.ts';
import { enqueueCommitted } from '../submissions/enqueue.ts';
import { ApiError, errors, fromKeyRule } from '../errors.ts';
import { bodyText, FORM_TYPE, parseJsonObject, readBodyText } from '../middleware/json-body.ts';
import {
  changeOwnerKey,
  confirmOwnerMailbox,
  deleteOwnerSubmission,
  listOwnerKeys,
  ownerConsent,
  ownerSubmissionsPage,
  ownerSubmissionWithKey,
  ownerOverview,
  resendOwnerSubmission,
  sendOwnerCsv,
  sendOwnerFile,
  type OwnerKeyChanges,
} from './operations.ts';
import { clearedSessionCookie, crossSiteGuard, csrfGuard, formBody, ownerState, requireOwner, SESSION_COOKIE, sessionCookie } from './session.ts';
import { createRouter } from '../router.ts';
import { validate } from '../validate.ts';
import { renderPage, SCRIPTED_PAGE_HEADERS } from '../view.ts';

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

/** Fixed texts for ?notice= after a redirect: nothing from the query string is shown as given. */
const NOTICES: Record<string, string> = {
  'signed-out': 'You are signed out.',
  saved: 'Key settings saved.',
  disabled: 'Key disabled: submissions with it are refused until you enable it again.',
  enabled: 'Key enabled.',
  deleted: 'Key deleted.',
  resent: 'The email is queued to be sent again; its status below follows.',
  confirmed: 'Your address is confirmed: every message is emailed to it, the waiting ones now.',
  removed: 'Message deleted with its files.',
  'ham-taught': 'Marked not spam: the filter learned from it, and a held message is on its way to your inbox.',
  'spam-taught': 'Marked spam: the filter learned from it.',
  'ham-untaught':
    'Marked not spam, and a held message is on its way to your inbox. The filter learns from it later: this key has taught as many marks as it may in an hour, or the filter is unavailable.',
  // "Not spam" on a message that was not held (sent already, or on its way): nothing is released.
  'ham-taught-nothing-held': 'Marked not spam: the filter learned from it.',
  'ham-untaught-nothing-held':
    'Marked not spam. The filter learns from it later: this key has taught as many marks as it may in an hour, or the filter is unavailable.',
  'spam-untaught': 'Marked spam. The filter learns from it later: this key has taught as many marks as it may in an hour, or the filter is unavailable.',
};
const noticeOf = (ctx: AppContext) => NOTICES[typeof ctx.query.notice === 'string' ? ctx.query.notice : ''] ?? '';

const STATUS_HELP: Record<EmailStatus, string> = {
  queued: 'waiting for a worker',
  sending: 'being sent now',
  retrying: 'the mail server refused for now; it will be tried again',
  sent: 'accepted by the mail server',
  failed: 'not delivered: the last error says why; you can re-send it',
  skipped: 'not emailed (the form asked for no email)',
  held: 'waiting until your address confirms it wants these emails (on the page of your keys)',
  bounced: 'accepted by the mail server, then returned undelivered: the report below says why; you can re-send it',
  complained: 'delivered, then reported as spam by the receiving mailbox',
  suppressed: 'not attempted: emails to your address bounced several times, or one was reported as spam; signing in here lifts that, then re-send it',
  spam: 'not emailed: the spam filter held it back; if it is not spam, say so and it is sent',
};

/** The pages' times (./times.ts), for the templates. */
const TIMES = { utc, ago: (iso: string) => ago(iso) };
const KEYS_PAGE = { label_max: KEY_LABEL_MAX, scripts: ['/assets/owner.js'], ...TIMES };

const KEY_ACTIONS = {
  save: 'saved',
  disable: 'disabled',
  enable: 'enabled',
  delete: 'deleted',
} as const;

export function ownerPageRoutes(deps: AppDeps, limiters: { mail: Middleware<AppState>; signIn: Middleware<AppState> }): Router<AppState> {
  const router = createRouter();
  const secure = deps.config.PUBLIC_URL.startsWith('https:');
  const sameSite = crossSiteGuard(deps.config.PUBLIC_URL);
  const signedIn = requireOwner(deps, 'page');
  const write = [sameSite, signedIn, formBody, csrfGuard(deps.config.SECRET)];
  const signInPage = { link_minutes: SIGN_IN_LINK_TTL_MINUTES, session_days: SESSION_TTL_DAYS, sent: false, email: '', error: '', notice: '' };
  const chrome = (ctx: AppContext) => {
    const state = ownerState(ctx);
    return { email: state.owner!.email, csrf: state.csrf!, notice: noticeOf(ctx), error: '' };
  };
  const notFound = (ctx: AppContext) => renderPage(ctx, 'owner-not-found', { email: ownerState(ctx).owner!.email }, { status: 404 });
  const see = (ctx: AppContext, path: string) => {
    ctx.status = 303;
    ctx.redirect(path);
  };

  // A browser's form gets a refusal (cross-site, rate limit, a bad request) as a page; JSON asks get JSON.
  router.use(async (ctx, next) => {
    try {
      await next();
    } catch (caught) {
      const error = caught instanceof KeyRuleError ? fromKeyRule(caught) : caught;
      if (!(error instanceof ApiError) || error.status >= 500 || ctx.is('application/json')) throw error;
      ctx.set(error.headers);
      // A bad field says which and why: "from: Give a date as YYYY-MM-DD."
      const fields = Object.entries(error.errors).filter(([name]) => name !== '__all__');
      const message = fields.length ? fields.map(([name, messages]) => `${name}: ${messages.join(' ')}`).join(' ') : error.message;
      renderPage(ctx, 'owner-error', { message }, { status: error.status });
    }
  });

  router.get('/owner', async (ctx) => {
    const cookie = ctx.cookies.get(SESSION_COOKIE);
    if (cookie && (await findSession(deps.orm.em.fork(), cookie))) return see(ctx, '/owner/keys');
    renderPage(ctx, 'owner-sign-in', { ...signInPage, notice: noticeOf(ctx) });
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
      return renderPage(ctx, 'owner-sign-in', { ...signInPage, email: formEmail.slice(0, 254), error: message }, { status: 400 });
    }
    const keyEmailId = await requestSignIn(deps.orm.em.fork(), deps.vault, { email, emailsPerHour: deps.config.SIGN_IN_EMAILS_PER_HOUR });
    if (keyEmailId) await enqueueCommitted(ctx, deps, keyEmailJob(keyEmailId, ctx.state.requestId));
    if (isForm) return renderPage(ctx, 'owner-sign-in', { ...signInPage, sent: true, email });
    ctx.body = { success: true, message: signInAnswer(email) };
  });

  // Mail scanners open links: the GET only shows a button; the POST uses the link.
  router.get('/owner/link', (ctx) => {
    const token = typeof ctx.query.token === 'string' ? ctx.query.token.slice(0, 100) : '';
    if (!token) return renderPage(ctx, 'owner-link-invalid', { link_minutes: SIGN_IN_LINK_TTL_MINUTES }, { status: 400 });
    renderPage(ctx, 'owner-link', { token });
  });

  router.post('/owner/link', sameSite, limiters.signIn, formBody, async (ctx) => {
    const signedIn = await consumeSignIn(deps.orm.em.fork(), ownerState(ctx).form?.get('token') ?? '');
    if (!signedIn) return renderPage(ctx, 'owner-link-invalid', { link_minutes: SIGN_IN_LINK_TTL_MINUTES }, { status: 400 });
    ctx.set('Set-Cookie', sessionCookie(signedIn.cookie, secure));
    ctx.state.log.info({ session: signedIn.session.id }, 'owner signed in');
    see(ctx, '/owner/keys');
  });

  router.post('/owner/sign-out', ...write, async (ctx) => {
    await endSession(deps.orm.em.fork(), ownerState(ctx).owner!.id);
    ctx.set('Set-Cookie', clearedSessionCookie(secure));
    see(ctx, '/owner?notice=signed-out');
  });

  router.get('/owner/keys', signedIn, async (ctx) => {
    const page = chrome(ctx);
    renderPage(
      ctx,
      'owner-keys',
      { ...page, keys: await listOwnerKeys(deps, page.email), ...(await ownerConsent(deps, page.email)), ...KEYS_PAGE },
      { headers: SCRIPTED_PAGE_HEADERS },
    );
  });

  router.post('/owner/confirm', ...write, async (ctx) => {
    await confirmOwnerMailbox(ctx, deps, ownerState(ctx).owner!.email);
    see(ctx, '/owner/keys?notice=confirmed');
  });

  router.post('/owner/keys/:keyId', ...write, async (ctx) => {
    const form = ownerState(ctx).form!;
    const action = form.get('action') ?? 'save';
    if (!(action in KEY_ACTIONS)) throw errors.invalidFields({ action: ['Must be save, disable, enable or delete.'] });
    const page = chrome(ctx);
    try {
      // Deleting is final: the form asks for a tick as well, since a page without script cannot ask twice.
      if (action === 'delete' && form.get('confirm_delete') !== 'yes') {
        throw new KeyRuleError('invalid', 'confirm_delete', 'To delete the key, tick "Yes, delete this key for good" and press Delete again.');
      }
      const changes: OwnerKeyChanges =
        action === 'save' ? settingsOf(form) : { status: action === 'disable' ? 'disabled' : action === 'enable' ? 'active' : 'deleted' };
      const changed = await changeOwnerKey(deps, page.email, ctx.params.keyId ?? '', changes);
      if (!changed) return notFound(ctx);
    } catch (error) {
      if (!(error instanceof KeyRuleError) || error.code === 'not_found') throw error;
      const keys = await listOwnerKeys(deps, page.email);
      return renderPage(
        ctx,
        'owner-keys',
        { ...page, keys, ...(await ownerConsent(deps, page.email)), ...KEYS_PAGE, error: error.message },
        { status: 400, headers: SCRIPTED_PAGE_HEADERS },
      );
    }
    see(ctx, `/owner/keys?notice=${KEY_ACTIONS[action as keyof typeof KEY_ACTIONS]}`);
  });

  /** A key's list of messages (the Spam view: only those held as spam), filtered and paged. */
  const listPage = async (ctx: RouteContext, spamView: boolean) => {
    const page = chrome(ctx);
    const cursor = typeof ctx.query.cursor === 'string' ? ctx.query.cursor : undefined;
    const filters = validate(ListFilterSchema, { ...ctx.query });
    const keyId = ctx.params.keyId ?? '';
    const result = await ownerSubmissionsPage(deps, page.email, keyId, {
      cursor,
      filters,
      sessionId: ownerState(ctx).owner!.id,
      ...(spamView ? { status: 'spam' as const } : {}),
    });
    if (!result) return notFound(ctx);
    const base = `/owner/keys/${result.key.id}/${spamView ? 'spam' : 'submissions'}`;
    const submissions = result.submissions.map((record) => ({ ...record, preview: previewOf(record, defaultSubject(record.email)) }));
    // The optional live refresh (assets/owner.js) reads the same page of the JSON API.
    const apiQuery = filterQuery(filters, { ...(cursor ? { cursor } : {}), ...(spamView ? { view: 'spam' } : {}) });
    renderPage(
      ctx,
      'owner-submissions',
      {
        ...page,
        ...result,
        submissions,
        spam_view: spamView,
        first_page: !cursor,
        filters,
        filtered: isFiltered(filters),
        statuses: EMAIL_STATUSES,
        status_help: STATUS_HELP,
        base,
        newest: `${base}${filterQuery(filters)}`,
        older: result.next_cursor ? `${base}${filterQuery(filters, { cursor: result.next_cursor })}` : '',
        csv: `/owner/keys/${result.key.id}/submissions.csv${filterQuery(filters)}`,
        refresh: `/owner/api/keys/${result.key.id}/submissions${apiQuery}`,
        scripts: ['/assets/owner.js'],
        ...TIMES,
      },
      { headers: SCRIPTED_PAGE_HEADERS },
    );
  };

  /** The overview: one key's messages per day, or all the address's keys' together with a line per key. */
  const overviewPage = async (ctx: AppContext, keyId?: string) => {
    const page = chrome(ctx);
    const found = await ownerOverview(deps, page.email, keyId);
    if (!found) return notFound(ctx);
    renderPage(
      ctx,
      'owner-overview',
      {
        ...page,
        ...found,
        chart: barChart(found.overview.days),
        outcomes: OUTCOMES,
        outcome_words: OUTCOME_WORDS,
        scripts: ['/assets/owner.js'],
        ...TIMES,
      },
      { headers: SCRIPTED_PAGE_HEADERS },
    );
  };
  router.get('/owner/overview', signedIn, (ctx) => overviewPage(ctx));
  router.get('/owner/keys/:keyId/overview', signedIn, (ctx) => overviewPage(ctx, ctx.params.keyId ?? ''));

  router.get('/owner/keys/:keyId/submissions', signedIn, (ctx) => listPage(ctx, false));
  router.get('/owner/keys/:keyId/spam', signedIn, (ctx) => listPage(ctx, true));

  router.get('/owner/keys/:keyId/submissions.csv', signedIn, async (ctx) => {
    const filters = validate(ListFilterSchema, { ...ctx.query });
    if (!(await sendOwnerCsv(ctx, deps, ownerState(ctx).owner!, ctx.params.keyId ?? '', filters))) notFound(ctx);
  });

  /** One message: the whole record, its delivery history, its files and what can be done with it. */
  router.get('/owner/submissions/:id', signedIn, async (ctx) => {
    const page = chrome(ctx);
    const found = await ownerSubmissionWithKey(deps, page.email, ctx.params.id ?? '');
    if (!found) return notFound(ctx);
    const s = { ...found.submission, preview: previewOf(found.submission, defaultSubject(found.submission.email)) };
    renderPage(
      ctx,
      'owner-submission',
      {
        ...page,
        key: found.key,
        s,
        status_help: STATUS_HELP,
        resendable: RESENDABLE,
        refresh: `/owner/api/submissions/${s.submission_id}`,
        scripts: ['/assets/owner.js'],
        ...TIMES,
      },
      { headers: SCRIPTED_PAGE_HEADERS },
    );
  });

  router.get('/owner/submissions/:id/files/:fileId', signedIn, async (ctx) => {
    const email = ownerState(ctx).owner!.email;
    if (!(await sendOwnerFile(ctx, deps, email, ctx.params.id ?? '', ctx.params.fileId ?? ''))) notFound(ctx);
  });

  router.post('/owner/submissions/:id/resend', ...write, async (ctx) => {
    const record = await resendOwnerSubmission(ctx, deps, ownerState(ctx).owner!.email, ctx.params.id ?? '');
    if (!record) return notFound(ctx);
    see(ctx, `/owner/submissions/${record.submission_id}?notice=resent`);
  });

  router.post('/owner/submissions/:id/spam-mark', ...write, async (ctx) => {
    const form = ownerState(ctx).form!;
    const mark = form.get('mark');
    if (mark !== 'spam' && mark !== 'ham') throw errors.invalidFields({ mark: ['Must be spam or ham.'] });
    const result = await markSubmission(ctx, deps, ownerState(ctx).owner!.email, ctx.params.id ?? '', mark);
    if (!result) return notFound(ctx);
    const taught = result.teaching === 'taught' || result.teaching === 'known';
    const notice = `notice=${mark}-${taught ? 'taught' : 'untaught'}${mark === 'ham' && !result.released ? '-nothing-held' : ''}`;
    // Back where the button was: the Spam view's list, else the message's page.
    see(ctx, form.get('view') === 'spam' ? `/owner/keys/${result.submission.key.id}/spam?${notice}` : `/owner/submissions/${result.submission.id}?${notice}`);
  });

  router.post('/owner/submissions/:id/delete', ...write, async (ctx) => {
    const keyId = await deleteOwnerSubmission(deps, ownerState(ctx).owner!.email, ctx.params.id ?? '');
    if (!keyId) return notFound(ctx);
    see(ctx, `/owner/keys/${keyId}/submissions?notice=removed`);
  });

  return router;
}

/** The settings form: domains one a line (commas and spaces also separate), captcha or none, the spam filter's level. */
function settingsOf(form: URLSearchParams): OwnerKeyChanges {
  const domains = (form.get('domains') ?? '').split(/[\s,]+/).filter(Boolean);
  const captcha = form.get('captcha') ?? '';
  if (captcha && !(CAPTCHA_PROVIDERS as readonly string[]).includes(captcha)) {
    throw new KeyRuleError('invalid', 'captcha', `Captcha must be none or one of ${CAPTCHA_PROVIDERS.join(', ')}.`);
  }
  const spamFilter = form.get('spam_filter') ?? 'normal';
  if (!(SPAM_FILTER_LEVELS as readonly string[]).includes(spamFilter)) {
    throw new KeyRuleError('invalid', 'spam_filter', `Spam filter must be one of ${SPAM_FILTER_LEVELS.join(', ')}.`);
  }
  return {
    domains,
    captcha: captcha ? (captcha as CaptchaProvider) : null,
    spamFilter: spamFilter as SpamFilterLevel,
    spamToWebhooks: form.get('spam_to_webhooks') === 'yes',
    label: form.get('label') ?? '',
    subjectPrefix: form.get('subject_prefix') === 'yes',
  };
}
