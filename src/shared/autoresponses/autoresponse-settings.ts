// A key's autoresponse settings (the confirmation email to the visitor): the owner's subject and
// text as stored, and the rules of a change, applied to the key in the transaction of its other
// settings (updateKey of src/shared/keys/keys.ts) once its domains are changed, since the text's
// links are checked against them.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { VerificationKey } from '../keys/entities.ts';
import { KeyRuleError, updateKey, type KeyChanges } from '../keys/keys.ts';
import { hasForbiddenInLine, hasForbiddenInText } from '../keys/owner-text.ts';
import { linkRefusal } from './text-check.ts';

export type AutoresponseChanges = { enabled?: boolean | undefined; subject?: string | null | undefined; text?: string | null | undefined };

/** An autoresponse's subject: one line, a header's worth. Its text: a short note, not a newsletter. */
export const AUTORESPONSE_SUBJECT_MAX = 150;
export const AUTORESPONSE_TEXT_MAX = 2000;

/** An autoresponse subject as stored: trimmed, null when blank; one line of at most AUTORESPONSE_SUBJECT_MAX characters. */
export function parseAutoresponseSubject(subject: string | null): string | null {
  const trimmed = (subject ?? '').trim();
  if (trimmed === '') return null;
  if (hasForbiddenInLine(trimmed))
    throw new KeyRuleError('invalid', 'autoresponse.subject', 'A subject is one line: no line breaks, control or text-direction characters.');
  if (Array.from(trimmed).length > AUTORESPONSE_SUBJECT_MAX)
    throw new KeyRuleError('invalid', 'autoresponse.subject', `A subject has at most ${AUTORESPONSE_SUBJECT_MAX} characters.`);
  return trimmed;
}

/** An autoresponse text as stored: plain text, line ends as \n, trimmed, null when blank; at most AUTORESPONSE_TEXT_MAX characters. */
export function parseAutoresponseText(text: string | null): string | null {
  const normalised = (text ?? '').replace(/\r\n?/g, '\n').trim();
  if (normalised === '') return null;
  // Tabs and line breaks are the text's own; other controls have no place in an email's text.
  if (hasForbiddenInText(normalised))
    throw new KeyRuleError('invalid', 'autoresponse.text', 'The text is plain text: no control or text-direction characters.');
  if (Array.from(normalised).length > AUTORESPONSE_TEXT_MAX)
    throw new KeyRuleError('invalid', 'autoresponse.text', `The text has at most ${AUTORESPONSE_TEXT_MAX} characters.`);
  return normalised;
}

export function applyAutoresponse(key: VerificationKey, changes: AutoresponseChanges): void {
  const [subject, text] = [key.autoresponseSubject, key.autoresponseText];
  if (changes.subject !== undefined) key.autoresponseSubject = parseAutoresponseSubject(changes.subject);
  if (changes.text !== undefined) key.autoresponseText = parseAutoresponseText(changes.text);
  if (changes.enabled !== undefined) key.autoresponseEnabled = changes.enabled;
  if (key.autoresponseEnabled && (!key.autoresponseSubject || !key.autoresponseText)) {
    throw new KeyRuleError('invalid', 'autoresponse', 'An autoresponse needs a subject and a text before it is turned on.');
  }
  // The operator approved these words, not the next ones.
  if (key.autoresponseReview === 'approved' && (subject !== key.autoresponseSubject || text !== key.autoresponseText)) key.autoresponseReview = null;
  if (key.autoresponseSubject && key.autoresponseText) {
    const refused = linkRefusal({ subject: key.autoresponseSubject, text: key.autoresponseText }, key.domains);
    if (refused) throw new KeyRuleError('invalid', refused.field, refused.message);
  }
}

/** A key's settings with its autoresponse's: what the owner API, the console and the admin API change. */
export type KeySettingsChanges = KeyChanges & {
  /** The confirmation email to the visitor: each part left out is kept. */
  autoresponse?: AutoresponseChanges;
};

/** Changes the key whose lookup index is `keyHash`: its settings and its autoresponse's, in one transaction. */
export function updateKeySettings(em: EntityManager, keyHash: string, changes: KeySettingsChanges): Promise<VerificationKey> {
  const { autoresponse, ...keyChanges } = changes;
  return updateKey(em, keyHash, keyChanges, autoresponse && ((key) => applyAutoresponse(key, autoresponse)));
}
