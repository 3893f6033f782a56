// Text a visitor wrote, made safe to show to the form's owner: no bidirectional controls (they
// reorder what is displayed: `invoice\u202efdp.exe` shows as `invoiceexe.pdf`), and where one
// line is meant, no line breaks or other control characters that could start a line of its own.
// In a header (a subject, a file name), mail clients decode RFC 2047 encoded words, so what the
// owner would see there is decoded first and made safe after.

/** The embedding, override and isolate controls U+202A–U+202E and U+2066–U+2069. */
const BIDI_CONTROLS = /[\u202a-\u202e\u2066-\u2069]/g;
/** The directional marks too (left-to-right, right-to-left, Arabic letter): in a header, where no text needs them. */
const BIDI_MARKS = /[\u200e\u200f\u061c]/g;
const CONTROLS = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g;

export const withoutBidiControls = (value: string) => value.replace(BIDI_CONTROLS, '');

/** One line: bidi controls removed, every run of control characters (CR, LF, tab...) one space. */
export const oneLine = (value: string) => withoutBidiControls(value).replace(CONTROLS, ' ');

/** An RFC 2047 encoded word: `=?charset?Q?text?=` or `…?B?…`, the charset perhaps with an RFC 2231 language. */
const ENCODED_WORD = /=\?([^?\s*]+)(?:\*[^?\s]*)?\?([bq])\?([^?\s]*)\?=/giu;
/** An encoded word's text may encode another; past this many rounds, what is left is not decoded but dropped. */
const DECODE_ROUNDS = 4;

/** One encoded word's text, or undefined when its charset is unknown (a client may know it: it is not passed on). */
function decodeWord(charset: string, encoding: string, encoded: string): string | undefined {
  const bytes =
    encoding.toLowerCase() === 'b'
      ? Buffer.from(encoded, 'base64')
      : Buffer.from(
          encoded.replaceAll('_', ' ').replace(/=([0-9a-f]{2})/giu, (_match, hex: string) => String.fromCharCode(Number.parseInt(hex, 16))),
          'latin1',
        );
  try {
    return new TextDecoder(charset).decode(bytes);
  } catch {
    return undefined;
  }
}

/** The encoded words of a value decoded, as a mail client shows them; one that cannot be decoded becomes U+FFFD. */
export function decodeEncodedWords(value: string): string {
  let current = value;
  for (let round = 0; round < DECODE_ROUNDS; round += 1) {
    const next = current.replace(
      ENCODED_WORD,
      (_word, charset: string, encoding: string, encoded: string) => decodeWord(charset, encoding, encoded) ?? '\ufffd',
    );
    if (next === current) return current;
    current = next;
  }
  return current.replace(ENCODED_WORD, '\ufffd');
}

/**
 * A visitor's text for a header (the subject, an attachment's name): encoded words decoded, then one
 * line without bidi controls or marks, so that what the owner's client decodes carries none. The
 * mailer encodes what is not ASCII again, as encoded words of its own.
 */
export const headerText = (value: string) => oneLine(decodeEncodedWords(value)).replace(BIDI_MARKS, '');
