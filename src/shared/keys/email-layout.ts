// How the owner shapes a key's notification email: a subject pattern, custom fields shown first or
// left out, files attached or linked. Defaults are the email as it always was. Values a visitor
// wrote reach the subject only flattened to one line and cut short: a placeholder cannot add a header.
// What an owner may save is checked in keys.ts (parseEmailSubject, parseFieldNames).
import { oneLine } from '../infra/display-text.ts';

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
