// The change an owner (owner API) or the operator (admin API) may make to a key, as the body of
// PATCH …/keys/:key: the routes validate against it and both OpenAPI documents describe it.
import * as v from 'valibot';
import { CAPTCHA_PROVIDERS, KEY_STATUSES } from '../../shared/keys/entities.ts';
import { SPAM_FILTER_LEVELS } from '../../shared/words/spam-kinds.ts';
import { EMAIL_FIELD_LIST_MAX, EMAIL_FIELD_NAME_MAX, EMAIL_FILES_MODES, EMAIL_SUBJECT_MAX } from '../../shared/keys/email-layout.ts';
import { KEY_LABEL_MAX } from '../../shared/keys/keys.ts';
import { AUTORESPONSE_SUBJECT_MAX, AUTORESPONSE_TEXT_MAX, type KeySettingsChanges } from '../../shared/autoresponses/autoresponse-settings.ts';
import { AUTORESPONSE_REVIEWS } from '../../shared/words/autoresponse-kinds.ts';
import { CONFIRM_REQUESTS_PER_KEY, CONFIRM_REQUESTS_PER_MAILBOX, MAX_ADDED_RECIPIENTS } from '../../shared/recipients/recipients.ts';

export const KeyPatchSchema = v.strictObject(
  {
    status: v.optional(v.picklist(KEY_STATUSES, `Must be one of ${KEY_STATUSES.join(', ')}.`)),
    use_domain: v.optional(v.boolean('Must be true or false.')),
    domains: v.optional(v.array(v.unknown(), 'Must be a list of host names.')),
    captcha: v.optional(v.nullable(v.picklist(CAPTCHA_PROVIDERS, `Must be null or one of ${CAPTCHA_PROVIDERS.join(', ')}.`))),
    spam_filter: v.optional(v.picklist(SPAM_FILTER_LEVELS, `Must be one of ${SPAM_FILTER_LEVELS.join(', ')}.`)),
    spam_to_webhooks: v.optional(v.boolean('Must be true or false.')),
    label: v.optional(
      v.pipe(
        v.nullable(v.string('Must be a string or null.')),
        v.description(`The owner's name for the key, one line of at most ${KEY_LABEL_MAX} characters; null or "" removes it`),
      ),
    ),
    subject_prefix: v.optional(
      v.pipe(v.boolean('Must be true or false.'), v.description('Whether the key\'s emails carry the label before their subject: "[label] subject"')),
    ),
    autoresponse: v.optional(
      v.pipe(
        v.strictObject(
          {
            enabled: v.optional(v.boolean('Must be true or false.')),
            subject: v.optional(v.nullable(v.string('Must be a string or null.'))),
            text: v.optional(v.nullable(v.string('Must be a string or null.'))),
          },
          'Only enabled, subject and text can be changed.',
        ),
        v.description(
          `The confirmation email to the visitor (off by default): subject, one line of at most ${AUTORESPONSE_SUBJECT_MAX} characters; text, plain text of at most ${AUTORESPONSE_TEXT_MAX} characters. It carries no text a visitor wrote. Enabling it needs both.`,
        ),
      ),
    ),
    email_subject: v.optional(
      v.pipe(
        v.nullable(v.string('Must be a string or null.')),
        v.description(
          `The subject of the key's emails, as a pattern of at most ${EMAIL_SUBJECT_MAX} characters with the placeholders {subject}, {name}, {email}, {key} (the label) and {field:NAME}, each perhaps with a default after a bar ({name|a visitor}); null or "" restores the default`,
        ),
      ),
    ),
    email_field_order: v.optional(
      v.pipe(
        v.array(v.string('Must be a list of field names.'), 'Must be a list of field names.'),
        v.maxLength(EMAIL_FIELD_LIST_MAX, `At most ${EMAIL_FIELD_LIST_MAX} field names.`),
        v.description(
          `Custom field names the email shows first, in this order (the others follow in arrival order); at most ${EMAIL_FIELD_LIST_MAX} names of at most ${EMAIL_FIELD_NAME_MAX} characters`,
        ),
      ),
    ),
    email_hidden_fields: v.optional(
      v.pipe(
        v.array(v.string('Must be a list of field names.'), 'Must be a list of field names.'),
        v.maxLength(EMAIL_FIELD_LIST_MAX, `At most ${EMAIL_FIELD_LIST_MAX} field names.`),
        v.description(
          `Custom field names the email leaves out (they stay in the record, the APIs, the console and the CSV); at most ${EMAIL_FIELD_LIST_MAX} names of at most ${EMAIL_FIELD_NAME_MAX} characters`,
        ),
      ),
    ),
    recipients: v.optional(
      v.pipe(
        v.array(v.string('Must be a list of email addresses.'), 'Must be a list of email addresses.'),
        v.maxLength(MAX_ADDED_RECIPIENTS, `At most ${MAX_ADDED_RECIPIENTS} more recipients per key, besides its own address.`),
        v.description(
          `The addresses that receive a copy of each message besides the key's own: at most ${MAX_ADDED_RECIPIENTS}, the whole list each time (an address left out is removed). Each new one is emailed a request to confirm and receives nothing until it does; its copies wait for it up to HELD_TTL_DAYS (7 days by default). At most ${CONFIRM_REQUESTS_PER_KEY} request per address per key and ${CONFIRM_REQUESTS_PER_MAILBOX} per address across all keys per 24 hours: past that 429. They get the emails only, never the console or these settings.`,
        ),
      ),
    ),
    email_files: v.optional(
      v.pipe(
        v.picklist(EMAIL_FILES_MODES, `Must be one of ${EMAIL_FILES_MODES.join(', ')}.`),
        v.description('attach: files attached while they fit ATTACH_MAX_BYTES, else linked (the default); link: always a signed download link'),
      ),
    ),
  },
  'Only status, use_domain, domains, captcha, spam_filter, spam_to_webhooks, label, subject_prefix, autoresponse, email_subject, email_field_order, email_hidden_fields, email_files and recipients can be changed.',
);

export type KeyPatch = v.InferOutput<typeof KeyPatchSchema>;

/** The operator's change of a key (admin API): the owner's settings, and the review of the key's autoresponse. */
export const AdminKeyPatchSchema = v.strictObject(
  {
    ...KeyPatchSchema.entries,
    autoresponse_review: v.optional(
      v.pipe(
        v.nullable(v.picklist(AUTORESPONSE_REVIEWS, `Must be null or one of ${AUTORESPONSE_REVIEWS.join(', ')}.`)),
        v.description(
          "The operator's review of the key's autoresponse: approved (it goes under AUTORESPONSES=approval, and the key has AUTORESPONSES_KEY_PER_DAY from its first day), blocked (none goes), or null. A change of its subject or text sets approved back to null.",
        ),
      ),
    ),
  },
  'Only status, use_domain, domains, captcha, spam_filter, spam_to_webhooks, label, subject_prefix, autoresponse, autoresponse_review, email_subject, email_field_order, email_hidden_fields, email_files and recipients can be changed.',
);

export type AdminKeyPatch = v.InferOutput<typeof AdminKeyPatchSchema>;

/** The settings a PATCH body changes, in the keys feature's terms; its domains and recipients are read by each route's own rules. */
export function keyChangesOf(patch: KeyPatch | AdminKeyPatch): Omit<KeySettingsChanges, 'domains'> {
  return {
    autoresponseReview: 'autoresponse_review' in patch ? patch.autoresponse_review : undefined,
    status: patch.status,
    useDomain: patch.use_domain,
    captcha: patch.captcha,
    spamFilter: patch.spam_filter,
    spamToWebhooks: patch.spam_to_webhooks,
    label: patch.label,
    subjectPrefix: patch.subject_prefix,
    autoresponse: patch.autoresponse,
    emailSubject: patch.email_subject,
    emailFieldOrder: patch.email_field_order,
    emailHiddenFields: patch.email_hidden_fields,
    emailFiles: patch.email_files,
  };
}
