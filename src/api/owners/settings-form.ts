// The key's settings form (src/api/views/owner-key-settings.njk): what it asks to change, what the
// owner typed (shown again when a save is refused, or when another button of the form was pressed),
// and which of its fields a refusal names.
import { CAPTCHA_PROVIDERS, type CaptchaProvider } from '../../shared/keys/entities.ts';
import { KeyRuleError } from '../../shared/keys/keys.ts';
import { SPAM_FILTER_LEVELS, type SpamFilterLevel } from '../../shared/words/spam-kinds.ts';
import type { OwnerKeyChanges } from './operations.ts';

/** Field names one a line (commas also separate). */
const namesOf = (value: string | null) =>
  (value ?? '')
    .split(/[\n,]+/)
    .map((name) => name.trim())
    .filter(Boolean);

/** The settings form: domains one a line (commas and spaces also separate), captcha or none, the spam filter's level. */
export function settingsOf(form: URLSearchParams): OwnerKeyChanges {
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

/** Whether the request came from the settings form (it carries its settings), not from a bare button. */
export const isSettingsForm = (form: URLSearchParams) => form.get('form') === 'settings';

/**
 * What the owner typed, in the shape of a key record, to lay over the stored key when the form is
 * shown again: every field as typed, the ticks included, nothing parsed or dropped.
 */
export function typedSettings(form: URLSearchParams) {
  const lines = (name: string) => (form.get(name) ?? '').split('\n').map((line) => line.replace(/\r$/, ''));
  return {
    label: form.get('label') ?? '',
    subject_prefix: form.get('subject_prefix') === 'yes',
    domains: lines('domains'),
    captcha: form.get('captcha') ?? '',
    spam_filter: form.get('spam_filter') ?? 'normal',
    spam_to_webhooks: form.get('spam_to_webhooks') === 'yes',
    autoresponse: {
      enabled: form.get('autoresponse_enabled') === 'yes',
      subject: form.get('autoresponse_subject') ?? '',
      text: form.get('autoresponse_text') ?? '',
    },
    email_subject: form.get('email_subject') ?? '',
    email_field_order: lines('email_field_order'),
    email_hidden_fields: lines('email_hidden_fields'),
    email_files: form.get('email_files') === 'link' ? 'link' : 'attach',
    confirm_delete: form.get('confirm_delete') === 'yes',
    new_recipient: form.get('email') ?? '',
  };
}
export type TypedSettings = ReturnType<typeof typedSettings>;

/** The form's field a refusal names (KeyRuleError's field), to mark it and put the reason next to it; undefined: the form as a whole. */
export function refusedField(error: KeyRuleError, form: URLSearchParams): string | undefined {
  switch (error.field) {
    case 'label':
    case 'domains':
    case 'captcha':
    case 'spam_filter':
    case 'email_subject':
    case 'email_field_order':
    case 'email_hidden_fields':
    case 'confirm_delete':
    case 'test_message':
    case 'autoresponse_test':
      return error.field;
    case 'autoresponse.subject':
      return 'autoresponse_subject';
    case 'autoresponse.text':
      return 'autoresponse_text';
    // On without both: the one left empty.
    case 'autoresponse':
      return (form.get('autoresponse_subject') ?? '').trim() === '' ? 'autoresponse_subject' : 'autoresponse_text';
    case 'recipients':
      return 'email';
    default:
      return undefined;
  }
}
