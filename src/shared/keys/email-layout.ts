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

/** A placeholder's name and its default: `{name|a visitor}` is the field called name, or "a visitor" when it is empty. */
export function placeholderParts(inside: string): { name: string; fallback: string } {
  const bar = inside.indexOf('|');
  return bar < 0 ? { name: inside, fallback: '' } : { name: inside.slice(0, bar), fallback: inside.slice(bar + 1).trim() };
}

/** Where a placeholder came out empty without a default, while the subject is tidied; no value or pattern holds it (both are one line, without controls). */
const EMPTY = '\u0001';
const OPENING = '([(\\[<"\'“«])';
const SEPARATOR = '[:;,|·–—-]+';
/** An empty placeholder within brackets or quotes (perhaps with other empty ones): the pair goes too, when it matches. */
const EMPTY_PAIR = new RegExp(`\\s*${OPENING}[\\s${EMPTY}]*${EMPTY}[\\s${EMPTY}]*([)\\]>"'”»])`, 'g');
const PAIRS: Record<string, string> = { '(': ')', '[': ']', '<': '>', '"': '"', "'": "'", '“': '”', '«': '»' };
/** An empty placeholder with the separators around it ("{name}: …" without a name, "… - {name}" at the end). */
const SEPARATED = new RegExp(`(\\s*${SEPARATOR})?(\\s*)${EMPTY}((\\s*)${SEPARATOR}(?=\\s|$))?`, 'g');
/** What may follow an empty placeholder for the separator before it to go: the end, or a part in brackets. */
const ENDS_PART = new RegExp(`^[\\s${EMPTY}]*(?:$|[(\\[<])`);

/** Of the separators around an empty placeholder, the one that would dangle: the one before it when there are two, the one after it, or the one before it at the end of a part. */
function dropSeparator(whole: string, before: string | undefined, space: string, after: string | undefined, afterSpace: string, offset: number, text: string) {
  if (before && after) return `${EMPTY}${after}`;
  if (after) return `${space}${EMPTY}${afterSpace}`;
  if (before && ENDS_PART.test(text.slice(offset + whole.length))) return `${space}${EMPTY}`;
  return whole;
}

/** The rendered subject without the debris of empty placeholders: no empty bracket pair, no dangling separator, single spaces around what was left out. */
function tidy(rendered: string): string {
  return rendered
    .replace(EMPTY_PAIR, (whole, open: string, close: string) => (PAIRS[open] === close ? EMPTY : whole))
    .replace(SEPARATED, dropSeparator)
    .replace(new RegExp(`(\\s*)${EMPTY}+(\\s*)`, 'g'), (_whole, before: string, after: string) => (before || after ? ' ' : ''));
}

/**
 * The subject from a pattern; `{name}` is the custom field called name (any case), empty when there
 * is none. A placeholder may give a default after a bar (`{name|a visitor}`); one left empty without
 * a default takes its debris along: an empty pair of brackets or quotes, a dangling separator.
 */
export function renderSubjectPattern(
  pattern: string,
  values: { subject: string; email: string; key: string | null; customFields: Array<[string, string]> },
): string {
  const field = (name: string) => values.customFields.find(([fieldName]) => fieldName.trim().toLowerCase() === name.trim().toLowerCase())?.[1] ?? '';
  const rendered = pattern.replaceAll(EMPTY, '').replace(PLACEHOLDER, (whole, inside: string) => {
    const { name, fallback } = placeholderParts(inside);
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
    const shown = flat(value, PLACEHOLDER_VALUE_MAX).replaceAll(EMPTY, '') || flat(fallback, PLACEHOLDER_VALUE_MAX);
    return shown || EMPTY;
  });
  return flat(tidy(rendered), EMAIL_SUBJECT_RENDERED_MAX);
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
    .map((match) => placeholderParts(match[1] ?? '').name)
    .filter((name) => !SIMPLE_PLACEHOLDERS.includes(name) && !/^field:.+$/.test(name));
  if (unknown.length > 0)
    throw new KeyRuleError(
      'invalid',
      'email_subject',
      `Unknown placeholder${unknown.length > 1 ? 's' : ''}: ${unknown.map((name) => `{${name}}`).join(', ')}. Known: {subject}, {name}, {email}, {key}, {field:NAME}, each perhaps with a default after a bar: {name|a visitor}.`,
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
