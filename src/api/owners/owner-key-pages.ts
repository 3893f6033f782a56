// /owner/keys, /owner/confirm, /owner/overview — the keys of the signed-in address: their list with
// the mailbox's consent, each key's settings (save, disable, enable, delete) and its added
// recipients (add one, remove one), and the overview of messages per day, of one key or of all.
import { arrangeFields, renderSubjectPattern } from '../../shared/keys/email-layout.ts';
import type Router from '@koa/router';
import { CAPTCHA_PROVIDERS, type CaptchaProvider } from '../../shared/keys/entities.ts';
import { SPAM_FILTER_LEVELS, type SpamFilterLevel } from '../../shared/spam/spam-kinds.ts';
import { KeyRuleError } from '../../shared/keys/keys.ts';
import { renderAutoresponse } from '../../shared/autoresponses/autoresponses.ts';
import { OUTCOMES } from '../../shared/owners/overview.ts';
import type { AppContext, AppDeps, AppState, RouteContext } from '../context.ts';
import { errors, fromKeyRule } from '../api-errors.ts';
import type { RecipientsEdit } from '../../shared/recipients/recipients.ts';
import { mailboxOf } from '../../shared/keys/consent.ts';
import { refusalsAsPage } from '../middleware/error-handler.ts';
import { createRouter } from '../router.ts';
import { renderPage, SCRIPTED_PAGE_HEADERS } from '../view.ts';
import { barChart, OUTCOME_WORDS } from './chart.ts';
import { changeOwnerKey, confirmOwnerMailbox, listOwnerKeys, ownerConsent, ownerOverview, type OwnerKeyChanges } from './operations.ts';
import { chrome, KEYS_PAGE, notFoundPage, pageGuards, see, TIMES } from './owner-pages.ts';
import { ownerState } from './session.ts';

const KEY_ACTIONS = {
  save: 'saved',
  disable: 'disabled',
  enable: 'enabled',
  delete: 'deleted',
} as const;

export function ownerKeyPages(deps: AppDeps): Router<AppState> {
  const router = createRouter();
  const { signedIn, write } = pageGuards(deps);
  router.use(refusalsAsPage('owner-error'));

  /** The keys page; with `refused`, a change refused (nothing of it kept), said above the keys as stored. */
  const keysPage = async (ctx: AppContext, refused?: KeyRuleError) => {
    const page = chrome(ctx);
    const em = ctx.state.em;
    // A refused change may be left on the key in memory: the page shows the keys as stored.
    if (refused) em.clear();
    const keys = (await listOwnerKeys(em, deps, page.email)).map(withPreview);
    renderPage(
      ctx,
      'owner-keys',
      {
        ...page,
        keys,
        ...(await ownerConsent(em, deps, page.email)),
        ...KEYS_PAGE,
        held_ttl_days: deps.config.HELD_TTL_DAYS,
        autoresponse_new_key_per_day: deps.config.AUTORESPONSES_NEW_KEY_PER_DAY,
        autoresponse_key_per_day: deps.config.AUTORESPONSES_KEY_PER_DAY,
        error: refused?.message ?? '',
      },
      { headers: SCRIPTED_PAGE_HEADERS, ...(refused ? { status: fromKeyRule(refused).status } : {}) },
    );
  };

  router.get('/owner/keys', signedIn, (ctx) => keysPage(ctx));

  router.post('/owner/confirm', ...write, async (ctx) => {
    await confirmOwnerMailbox(ctx, deps, ownerState(ctx).owner!.email);
    see(ctx, '/owner/keys?notice=confirmed');
  });

  router.post('/owner/keys/:keyId', ...write, async (ctx) => {
    const form = ownerState(ctx).form!;
    const action = form.get('action') ?? 'save';
    if (!(action in KEY_ACTIONS)) throw errors.invalidFields({ action: ['Must be save, disable, enable or delete.'] });
    try {
      // Deleting is final: the form asks for a tick as well, since a page without script cannot ask twice.
      if (action === 'delete' && form.get('confirm_delete') !== 'yes') {
        throw new KeyRuleError('invalid', 'confirm_delete', 'To delete the key, tick "Yes, delete this key for good" and press Delete again.');
      }
      const changes: OwnerKeyChanges =
        action === 'save' ? settingsOf(form) : { status: action === 'disable' ? 'disabled' : action === 'enable' ? 'active' : 'deleted' };
      const changed = await changeOwnerKey(ctx, deps, chrome(ctx).email, ctx.params.keyId ?? '', changes);
      if (!changed) return notFoundPage(ctx);
    } catch (error) {
      if (!(error instanceof KeyRuleError) || error.code === 'not_found') throw error;
      return keysPage(ctx, error);
    }
    see(ctx, `/owner/keys?notice=${KEY_ACTIONS[action as keyof typeof KEY_ACTIONS]}`);
  });

  /** One address added to the key's recipients (and asked to confirm), or one removed; the others are kept. */
  const recipientChange = async (ctx: RouteContext, edit: RecipientsEdit, notice: string) => {
    try {
      const changed = await changeOwnerKey(ctx, deps, chrome(ctx).email, ctx.params.keyId ?? '', { recipients: edit });
      if (!changed) return notFoundPage(ctx);
    } catch (error) {
      if (!(error instanceof KeyRuleError) || error.code === 'not_found') throw error;
      return keysPage(ctx, error);
    }
    see(ctx, `/owner/keys?notice=${notice}`);
  };
  router.post('/owner/keys/:keyId/recipients', ...write, (ctx) => {
    const address = (ownerState(ctx).form!.get('email') ?? '').trim();
    return recipientChange(
      ctx,
      (current) => {
        // The list would stay as it is: say so, rather than that an address was added and asked.
        if (current.some((recipient) => mailboxOf(recipient.email) === mailboxOf(address))) {
          throw new KeyRuleError('invalid', 'recipients', `${address} is one of this key's recipients already.`);
        }
        return [...current.map((recipient) => recipient.email), address];
      },
      'recipient-added',
    );
  });
  router.post('/owner/keys/:keyId/recipients/:recipientId/remove', ...write, (ctx) => {
    const removed = ctx.params.recipientId ?? '';
    return recipientChange(ctx, (current) => current.filter((recipient) => recipient.id !== removed).map((recipient) => recipient.email), 'recipient-removed');
  });

  /** The overview: one key's messages per day, or all the address's keys' together with a line per key. */
  const overviewPage = async (ctx: AppContext, keyId?: string) => {
    const page = chrome(ctx);
    const found = await ownerOverview(ctx.state.em, deps, page.email, keyId);
    if (!found) return notFoundPage(ctx);
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

  return router;
}

/** A key with the autoresponse its visitors would receive today, as the email's HTML part draws it (none without a subject and a text). */
function withPreview<
  K extends {
    label: string | null;
    autoresponse: { subject: string | null; text: string | null };
    email_subject: string | null;
    email_field_order: string[];
    email_hidden_fields: string[];
  },
>(key: K) {
  const { subject, text } = key.autoresponse;
  return {
    ...key,
    autoresponse_preview: subject && text ? renderAutoresponse({ subject, text, label: key.label, receivedAt: new Date() }) : null,
    email_preview: emailPreview(key),
  };
}

/** The owner's email for a sample submission (its fields: the ordered ones, then a sample's own), as the worker would lay it out; the view escapes it. */
function emailPreview(key: { label: string | null; email_subject: string | null; email_field_order: string[]; email_hidden_fields: string[] }) {
  const sample = { subject: 'Question about an order', email: 'visitor@example.org', key: key.label };
  const customFields: Array<[string, string]> = [
    ['name', 'Ada Lovelace'],
    ['company', 'Example Ltd'],
  ];
  for (const name of key.email_field_order) if (!customFields.some(([other]) => other === name)) customFields.push([name, `(${name})`]);
  const fields = arrangeFields(customFields, { fieldOrder: key.email_field_order, hiddenFields: key.email_hidden_fields });
  return {
    subject: key.email_subject ? renderSubjectPattern(key.email_subject, { ...sample, customFields }) : sample.subject,
    fields: fields.map(([name, value]) => `${name}: ${value}`),
  };
}

/** Field names one a line (commas also separate). */
const namesOf = (value: string | null) =>
  (value ?? '')
    .split(/[\n,]+/)
    .map((name) => name.trim())
    .filter(Boolean);

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
    // Only from a form that shows them: an older page saved in a tab keeps the layout as it is.
    ...(form.has('email_subject')
      ? {
          emailSubject: form.get('email_subject') ?? '',
          emailFieldOrder: namesOf(form.get('email_field_order')),
          emailHiddenFields: namesOf(form.get('email_hidden_fields')),
          emailFiles: form.get('email_files') === 'link' ? ('link' as const) : ('attach' as const),
        }
      : {}),
    autoresponse: {
      enabled: form.get('autoresponse_enabled') === 'yes',
      subject: form.get('autoresponse_subject') ?? '',
      text: form.get('autoresponse_text') ?? '',
    },
  };
}
