// What the owner console's pages share: their guards, the notices shown after a redirect, the
// words for each delivery status, and the page chrome (the signed-in address, the CSRF token).
// Server-rendered and working without JavaScript; every write is a form POST that checks the
// origin and the session's CSRF token, then redirects (303) to a page that shows the result.
import type { Middleware } from 'koa';
import type { EmailStatus } from '../../shared/deliveries/delivery-columns.ts';
import { KEY_LABEL_MAX } from '../../shared/keys/keys.ts';
import { AUTORESPONSE_SUBJECT_MAX, AUTORESPONSE_TEXT_MAX } from '../../shared/autoresponses/autoresponse-settings.ts';
import { MAX_ADDED_RECIPIENTS } from '../../shared/recipients/recipients.ts';
import type { AppContext, AppDeps, AppState } from '../context.ts';
import { renderPage } from '../view.ts';
import { crossSiteGuard, csrfGuard, formBody, ownerState, requireOwner } from './session.ts';
import { ago, utc } from './times.ts';

/** The guards of the console's pages: a page needs a session; a write also a same-site form with the CSRF token. */
export function pageGuards(deps: AppDeps): { sameSite: Middleware<AppState>; signedIn: Middleware<AppState>; write: Array<Middleware<AppState>> } {
  const sameSite = crossSiteGuard(deps.config.PUBLIC_URL);
  const signedIn = requireOwner(deps, 'page');
  return { sameSite, signedIn, write: [sameSite, signedIn, formBody, csrfGuard(deps.config.SECRET)] };
}

/** Fixed texts for ?notice= after a redirect: nothing from the query string is shown as given. */
export const NOTICES: Record<string, string> = {
  'signed-out': 'You are signed out.',
  saved: 'Key settings saved.',
  disabled: 'Key disabled: submissions with it are refused until you enable it again.',
  enabled: 'Key enabled.',
  deleted: 'Key deleted.',
  resent: 'The email is queued to be sent again; its status below follows.',
  'copy-resent': 'The copy is queued to be sent again to that recipient; its status below follows.',
  'recipient-added': 'Address added: it receives copies once it confirms through the link just emailed to it.',
  'recipient-removed': 'Address removed: it receives no more copies.',
  'test-sent': 'Test message sent: it goes to you, your added recipients, your chat channels and your webhooks, each marked as a test.',
  'autoresponse-test-sent': 'The autoresponse as saved is on its way to you, "[Test]" before its subject.',
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
export const noticeOf = (ctx: AppContext) => NOTICES[typeof ctx.query.notice === 'string' ? ctx.query.notice : ''] ?? '';

export const STATUS_HELP: Record<EmailStatus, string> = {
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

/** What each status means for a copy to one of the key's added recipients. */
export const COPY_STATUS_HELP: Partial<Record<EmailStatus, string>> = {
  queued: 'waiting for a worker',
  sending: 'being sent now',
  retrying: 'the mail server refused for now; it will be tried again',
  sent: 'accepted by the mail server',
  failed: 'not delivered: the error says why; you can re-send it',
  held: 'waiting until this address confirms it wants the copies (through the link emailed to it)',
  bounced: 'accepted by the mail server, then returned undelivered; you can re-send it',
  complained: 'delivered, then reported as spam by this address: it gets no more copies',
  suppressed: 'not attempted: this address bounced several times, reported a copy as spam, or is no longer a recipient',
};

/** The pages' times (./times.ts), for the templates. */
export const TIMES = { utc, ago: (iso: string) => ago(iso) };
export const KEYS_PAGE = {
  label_max: KEY_LABEL_MAX,
  recipients_max: MAX_ADDED_RECIPIENTS,
  autoresponse_subject_max: AUTORESPONSE_SUBJECT_MAX,
  autoresponse_text_max: AUTORESPONSE_TEXT_MAX,
  scripts: ['/assets/owner.js'],
  ...TIMES,
};

/** What every signed-in page shows: the address, the CSRF token for its forms, a notice. */
export const chrome = (ctx: AppContext) => {
  const state = ownerState(ctx);
  return { email: state.owner!.email, csrf: state.csrf!, notice: noticeOf(ctx), error: '' };
};

export const notFoundPage = (ctx: AppContext) => renderPage(ctx, 'owner-not-found', { email: ownerState(ctx).owner!.email }, { status: 404 });

/** After a write: on to the page that shows its result. */
export const see = (ctx: AppContext, path: string) => {
  ctx.status = 303;
  ctx.redirect(path);
};
