// A visitor's words made inert for a chat message, and cut to a platform's limit. Each platform's
// markup is escaped by its own module (one character at a time, so that a cut never splits an
// escape); what they share is here: no bidirectional controls or stray control characters, and no
// mention. A mention is `@` followed by a name where a word starts (`@here`, `@channel`,
// `@everyone`, `@all`, a user's name): an invisible word joiner (U+2060) after that `@` keeps the
// text as it reads while no platform sees a name there. An `@` inside a word (an email address) is
// left alone, except before those broadcast words.
import { oneLine, withoutBidiControls } from '../../../shared/infra/display-text.ts';

export const WORD_JOINER = '\u2060';

/** What ends a text cut to its platform's limit: the owner knows where to read the rest (no markup in it on any platform). */
export const CUT_MARKER = ' … (cut, the whole text is in the console)';
/** What ends a one-line value (a name, a subject) that was cut. */
export const SHORT_CUT_MARKER = '…';

/** Line breaks kept as `\n`; every other control character (and the line separators) a space; bidi controls dropped. */
export function cleanText(value: string): string {
  return withoutBidiControls(value)
    .replace(/\r\n?/g, '\n')
    .replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029]/g, ' ')
    .replace(/\t/g, '    ');
}

/** One line: control characters and line breaks a space each run, bidi controls dropped, trimmed. */
export const cleanLine = (value: string) => oneLine(value).trim();

const MENTION_START = /(^|[^\p{L}\p{N}])@/gu;
const BROADCAST = /@(?=(?:everyone|here|channel|all|group)(?![\p{L}\p{N}_]))/giu;

/** A word joiner after every `@` that could start a mention. */
export function defuseMentions(value: string): string {
  return value.replace(MENTION_START, `$1@${WORD_JOINER}`).replace(BROADCAST, `@${WORD_JOINER}`);
}

/** A character's form in the platform's markup (itself when it means nothing there). */
export type Escape = (character: string) => string;
const verbatim: Escape = (character) => character;

/**
 * `value` escaped, at most `max` UTF-16 code units long (every platform counts characters, none more
 * finely than that), ending in `marker` when it had to be cut. Cut between code points, never
 * inside an escape.
 */
export function fit(value: string, max: number, escape: Escape = verbatim, marker = CUT_MARKER): string {
  const room = Math.max(0, max - marker.length);
  let whole = '';
  // The longest escaped prefix that leaves room for the marker, kept while reading on to see whether all of it fits.
  let kept: string | undefined;
  for (const character of value) {
    const escaped = escape(character);
    if (kept === undefined && whole.length + escaped.length > room) kept = whole;
    whole += escaped;
    if (whole.length > max) return `${kept!.trimEnd()}${marker}`.slice(0, max);
  }
  return whole;
}

/** Bytes of the JSON body as sent. */
export const bodyBytes = (body: unknown) => Buffer.byteLength(JSON.stringify(body));
