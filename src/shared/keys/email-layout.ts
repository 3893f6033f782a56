// How the owner shapes a key's notification email: a subject pattern, custom fields shown first or
// left out, files attached or linked. Defaults are the email as it always was. Values a visitor
// wrote reach the subject only flattened to one line and cut short: a placeholder cannot add a header.
// What an owner may save is checked here too (parseEmailSubject, parseFieldNames), when a key changes.
import { oneLine } from '../infra/display-text.ts';
import { KeyRuleError } from './key-rule-error.ts';
import { hasForbiddenInLine } from './owner-text.ts';

export const EMAIL_FILES_MODES = ['attach', 'link'] as const;
export type EmailFilesMode = (typeof EMAIL_FILES_MODES)[number];

/** A subject pattern's longest length, in characters. */
export const EMAIL_SUBJECT_MAX = 200;
/** The longest list of field names (order or hidden), and the longest name in it. */
export const EMAIL_FIELD_LIST_MAX = 50;
export const EMAIL_FIELD_NAME_MAX = 200;
/** A placeholder's value in the subject is cut to this many characters; the whole subject to EMAIL_SUBJECT_RENDERED_MAX. */
export const PLACEHOLDER_VALUE_MAX = 200;
export const EMAIL_SUBJECT_RENDERED_MAX = 500;

export const PLACEHOLDER = /\{([^{}]*)\}/g;
export const SIMPLE_PLACEHOLDERS = ['subject', 'name', 'email', 'key'];

/** What the email's layout needs of a key. */
export type EmailLayout = { subject: string | null; fieldOrder: string[]; hiddenFields: string[]; files: EmailFilesMode };

export const DEFAULT_EMAIL_LAYOUT: EmailLayout = { subject: null, fieldOrder: [], hiddenFields: [], files: 'attach' };

/** One line, cut to `max` characters: what a visitor wrote, made fit for a header. */
const flat = (value: string, max: number) => Array.from(oneLine(value).trim()).slice(0, max).join('');

/** The subject from a pattern; `{name}` is the custom field called name (any case), empty when there is none. */
export function renderSubjectPattern(
  pattern: string,
  values: { subject: string; email: string; key: string | null; customFields: Array<[string, string]> },
): string {
  const field = (name: string) => values.customFields.find(([fieldName]) => fieldName.trim().toLowerCase() === name.trim().toLowerCase())?.[1] ?? '';
  const rendered = pattern.replace(PLACEHOLDER, (whole, name: string) => {
    const value =
      name === 'subject'
        ? values.subject
        : name === 'email'
          ? values.email
          : name === 'key'
            ? (values.key ?? '')
            : name === 'name'
              ? field('name')
              : name.startsWith('field:')
                ? field(name.slice('field:'.length))
                : whole;
    return flat(value, PLACEHOLDER_VALUE_MAX);
  });
  return flat(rendered, EMAIL_SUBJECT_RENDERED_MAX);
}

/** The custom fields as the email shows them: the hidden ones left out, the ordered ones first, the rest in arrival order. */
export function arrangeFields<T extends [string, string]>(fields: T[], layout: Pick<EmailLayout, 'fieldOrder' | 'hiddenFields'>): T[] {
  const shown = fields.filter(([name]) => !layout.hiddenFields.includes(name.trim()));
  const first = layout.fieldOrder.flatMap((wanted) => shown.filter(([name]) => name.trim() === wanted));
  return [...first, ...shown.filter((entry) => !first.includes(entry))];
}

/** A subject pattern as stored: trimmed, null when blank (the default subject); one line, known placeholders only. */
export function parseEmailSubject(pattern: string | null): string | null {
  const trimmed = (pattern ?? '').trim();
  if (trimmed === '') return null;
  if (hasForbiddenInLine(trimmed))
    throw new KeyRuleError('invalid', 'email_subject', 'A subject pattern is one line: no line breaks, control or text-direction characters.');
  if (Array.from(trimmed).length > EMAIL_SUBJECT_MAX)
    throw new KeyRuleError('invalid', 'email_subject', `A subject pattern has at most ${EMAIL_SUBJECT_MAX} characters.`);
  const unknown = [...trimmed.matchAll(PLACEHOLDER)]
    .map((match) => match[1] ?? '')
    .filter((name) => !SIMPLE_PLACEHOLDERS.includes(name) && !/^field:.+$/.test(name));
  if (unknown.length > 0)
    throw new KeyRuleError(
      'invalid',
      'email_subject',
      `Unknown placeholder${unknown.length > 1 ? 's' : ''}: ${unknown.map((name) => `{${name}}`).join(', ')}. Known: {subject}, {name}, {email}, {key}, {field:NAME}.`,
    );
  return trimmed;
}

/** A list of custom field names as stored (email_field_order, email_hidden_fields): trimmed, unique, bounded. */
export function parseFieldNames(names: string[], field: string): string[] {
  if (names.length > EMAIL_FIELD_LIST_MAX) throw new KeyRuleError('invalid', field, `At most ${EMAIL_FIELD_LIST_MAX} field names.`);
  const parsed: string[] = [];
  for (const raw of names) {
    const name = raw.trim();
    if (name === '' || hasForbiddenInLine(name))
      throw new KeyRuleError('invalid', field, 'A field name is one line, not blank, without control or text-direction characters.');
    if (Array.from(name).length > EMAIL_FIELD_NAME_MAX)
      throw new KeyRuleError('invalid', field, `A field name has at most ${EMAIL_FIELD_NAME_MAX} characters.`);
    if (!parsed.includes(name)) parsed.push(name);
  }
  return parsed;
}
