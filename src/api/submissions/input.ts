// Turns the fields of a submission, in arrival order, into a validated input:
// the named parameters of the spec, and every other field kept as a custom field.
import * as v from 'valibot';
import type { CustomFields } from '../../shared/submissions/entities.ts';
import { errors, type FieldErrors } from '../api-errors.ts';

/** A body's fields as they arrived: JSON entries, urlencoded pairs or multipart fields. */
export type RawFields = Array<[name: string, value: unknown]>;

export const LIMITS = {
  customFields: 100,
  fieldNameLength: 200,
  fieldValueBytes: 100 * 1024,
  messageLength: 100_000,
} as const;

/** The longest `access_key` a submission may carry (a key is a UUID: 36). */
export const ACCESS_KEY_MAX_LENGTH = 64;

const noLineBreaks = v.regex(/^[^\r\n]*$/, 'Must not contain line breaks.');

const text = (maxLength: number) => v.pipe(v.string('Must be a string.'), v.trim(), v.maxLength(maxLength, `Must be at most ${maxLength} characters.`));

/** The named parameters of POST /api/contact-api/ (spec 4.2). */
export const SubmissionFieldsSchema = v.object({
  access_key: v.pipe(text(ACCESS_KEY_MAX_LENGTH), v.description('Verification key')),
  email: v.pipe(text(254), noLineBreaks, v.email('Enter a valid email address.'), v.description("Sender's email address")),
  message: v.pipe(text(LIMITS.messageLength), v.description('Message content')),
  subject: v.optional(v.pipe(text(998), noLineBreaks, v.description('Email subject line; generated when omitted'))),
  success_url: v.optional(v.pipe(text(2048), v.description('Redirect target on success (browser form posts)'))),
  error_url: v.optional(v.pipe(text(2048), v.description('Redirect target on error (browser form posts)'))),
  not_email_sent: v.optional(
    v.pipe(
      v.union([v.boolean(), v.string()], 'Must be a boolean.'),
      v.transform((value) => value === true || ['true', '1', 'on', 'yes'].includes(String(value).trim().toLowerCase())),
      v.description('When true, the submission is saved but no email is sent'),
    ),
  ),
});

const NAMED = new Set(Object.keys(SubmissionFieldsSchema.entries));
const REQUIRED = ['access_key', 'email', 'message'] as const;

type NamedField = keyof typeof SubmissionFieldsSchema.entries;

/**
 * The reserved fields of other form services (Formspree, Basin, Web3Forms, FormSubmit), read as
 * this service's own parameter under the same rules, so that their forms work with only the action
 * changed. The service's own name wins when a form carries both; the other is still checked.
 */
export const FIELD_ALIASES: Readonly<Record<string, NamedField>> = {
  _replyto: 'email',
  replyto: 'email',
  _subject: 'subject',
  _next: 'success_url',
  _redirect: 'success_url',
  redirect: 'success_url',
};

/** The honeypots those services name: a filled one is a bot. */
export const HONEYPOT_FIELDS = ['_gotcha', '_honeypot', '_honey', 'botcheck'] as const;

/**
 * Their reserved fields that ask for what only a key's owner decides here (copies to more
 * addresses, the email's layout, an autoresponse, their captcha): read and dropped.
 */
export const DROPPED_FIELDS: ReadonlySet<string> = new Set(['_cc', '_template', '_autoresponse', '_captcha']);

/** Web3Forms' sender name: kept as the custom field `name` when the form has none. */
const FROM_NAME = 'from_name';
const FromNameSchema = v.pipe(text(200), noLineBreaks);

export type SubmissionInput = {
  accessKey: string;
  email: string;
  message: string;
  subject: string | undefined;
  successUrl: string | undefined;
  errorUrl: string | undefined;
  notEmailSent: boolean;
  customFields: CustomFields;
};

const isScalar = (value: unknown): value is string | number | boolean => typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';

const isBlank = (value: unknown) => value === undefined || value === null || (typeof value === 'string' && value.trim() === '');

/**
 * Validates the fields; throws the spec's 400 bodies. `ignored` names fields that are read
 * elsewhere (the honeypot, captcha answers) and are not custom fields.
 */
export function parseSubmissionFields(fields: RawFields, ignored: ReadonlySet<string> = new Set()): SubmissionInput {
  // Named parameters live in a null-prototype map: a field called __proto__ stays data.
  const named = Object.create(null) as Record<string, unknown>;
  const customFields: CustomFields = [];
  const fieldErrors = Object.create(null) as FieldErrors;

  // Values of the other services' reserved fields, in arrival order.
  const aliased: RawFields = [];
  const seenAliases = new Set<string>();

  for (const [name, value] of fields) {
    if (ignored.has(name) || DROPPED_FIELDS.has(name)) continue;
    // PostgreSQL stores neither NUL nor an unpaired surrogate (text and jsonb refuse both).
    const unstorable = unstorableText(name) ?? unstorableValue(value);
    if (unstorable) {
      // The name itself may be the culprit: report it with the bad characters replaced.
      fieldErrors[name.toWellFormed().replaceAll('\u0000', '\uFFFD')] = [unstorable];
      if (NAMED.has(name)) named[name] ??= value; // given, so not reported missing as well
      continue;
    }
    if (NAMED.has(name)) {
      if (name in named) fieldErrors[name] = ['Must be given once.'];
      else named[name] = typeof value === 'number' ? String(value) : value;
      continue;
    }
    if (Object.hasOwn(FIELD_ALIASES, name) || name === FROM_NAME) {
      if (seenAliases.has(name)) fieldErrors[name] = ['Must be given once.'];
      else aliased.push([name, typeof value === 'number' ? String(value) : value]);
      seenAliases.add(name);
      continue;
    }
    collectCustomField(name, value, customFields, fieldErrors);
  }

  // Which reserved field a named parameter's value came from: its errors name that field.
  const source = Object.create(null) as Record<string, string>;
  let fromName: string | undefined;
  for (const [alias, value] of aliased) {
    if (alias === FROM_NAME) {
      const checked = v.safeParse(FromNameSchema, value);
      if (checked.success) fromName = checked.output || undefined;
      else fieldErrors[alias] ??= [checked.issues[0].message];
      continue;
    }
    const target = FIELD_ALIASES[alias]!;
    if (isBlank(named[target]) && !(target in source)) {
      named[target] = value;
      source[target] = alias;
      continue;
    }
    const checked = v.safeParse(SubmissionFieldsSchema.entries[target], value);
    if (!checked.success) fieldErrors[alias] ??= [checked.issues[0].message];
  }
  if (fromName && customFields.length < LIMITS.customFields && !customFields.some(([name]) => name === 'name')) customFields.unshift(['name', fromName]);

  const missing = REQUIRED.filter((name) => isBlank(named[name]));
  if (missing.length > 0) throw errors.missingFields(missing);

  const result = v.safeParse(SubmissionFieldsSchema, { ...named });
  if (!result.success) {
    for (const issue of result.issues) {
      // The object's issues are keyed by field name; one about the whole body has no path.
      const key = issue.path?.[0]?.key;
      const field = typeof key === 'string' ? (source[key] ?? key) : '__all__';
      fieldErrors[field] ??= [issue.message];
    }
  }
  if (Object.keys(fieldErrors).length > 0 || !result.success) throw errors.invalidFields({ ...fieldErrors });

  const input = result.output;
  return {
    accessKey: input.access_key,
    email: input.email,
    message: input.message,
    subject: input.subject || undefined,
    successUrl: input.success_url || undefined,
    errorUrl: input.error_url || undefined,
    notEmailSent: input.not_email_sent ?? false,
    customFields,
  };
}

const UNSTORABLE = 'Must not contain NUL characters or unpaired surrogates.';

function unstorableText(text: string): string | undefined {
  return text.includes('\u0000') || !text.isWellFormed() ? UNSTORABLE : undefined;
}

function unstorableValue(value: unknown): string | undefined {
  if (typeof value === 'string') return unstorableText(value);
  if (Array.isArray(value)) return value.some((item) => typeof item === 'string' && unstorableText(item)) ? UNSTORABLE : undefined;
  return undefined;
}

function collectCustomField(name: string, value: unknown, into: CustomFields, fieldErrors: FieldErrors): void {
  if (name.length > LIMITS.fieldNameLength) {
    fieldErrors[name.slice(0, 40)] = [`Field name longer than ${LIMITS.fieldNameLength} characters.`];
    return;
  }
  // A JSON array of scalars is a repeated field, as a repeated name is in a form post.
  const values = Array.isArray(value) ? value : [value];
  for (const item of values) {
    if (item !== null && !isScalar(item)) {
      fieldErrors[name] = ['Must be a string or a list of strings.'];
      return;
    }
    const asText = item === null ? '' : String(item);
    if (Buffer.byteLength(asText) > LIMITS.fieldValueBytes) {
      fieldErrors[name] = [`Value larger than ${LIMITS.fieldValueBytes / 1024} KB.`];
      return;
    }
    if (into.length >= LIMITS.customFields) {
      // The first limit crossed ends the reading: no error per extra field.
      const message = `Too many custom fields: at most ${LIMITS.customFields}.`;
      throw errors.invalidFields({ [name]: [message] }, message);
    }
    into.push([name, asText]);
  }
}
