// A submission as a Mattermost incoming-webhook post: one markdown `text`. Every ASCII punctuation
// character of a visitor's text is escaped with a backslash (Mattermost's markdown honours
// CommonMark's escapes; `@` means nothing to it and is left), so no emphasis, link (`[click](http://evil)`, a bare URL: its `:` is
// escaped), heading, list, table, emoji or Slack-style `<!channel>` comes from it; leading spaces
// become no-break spaces so that an indented line is no code block. Mattermost finds mentions in the
// raw text, where a backslash does not hide `@channel`: the word joiner after the `@`
// (./chat-text.ts) does. Limit (Mattermost's post size): 16,383 characters of text.
import type { ChatNotice } from './chat-notice.ts';
import { senderLine, sizeInWords, spamLine } from './chat-notice.ts';
import { fit, SHORT_CUT_MARKER, type Escape } from './chat-text.ts';

export const MATTERMOST_MAX_TEXT = 16_383;
const SHOWN = { line: 500, fields: 25, fieldName: 100, fieldValue: 500, allFields: 4000, files: 1000 } as const;

/** ASCII punctuation but `@`: a backslash before it would split an address into words, one of them `@domain`, for the mention finder. */
export const escapeMattermost: Escape = (character) => (/^[!-/:-?[-`{-~]$/.test(character) ? `\\${character}` : character);

/** Each line's leading spaces as no-break spaces: four spaces would start a code block. */
const keepIndent = (value: string) => value.replace(/^ +/gm, (spaces) => '\u00a0'.repeat(spaces.length));

export function mattermostMessage(notice: ChatNotice) {
  const line = (value: string) => fit(value, SHOWN.line, escapeMattermost, SHORT_CUT_MARKER);
  const spam = spamLine(notice);
  const head = [
    `**${line(notice.headline)}**`,
    `**Subject:** ${line(notice.subject)}`,
    `**From:** ${line(senderLine(notice))}`,
    ...(spam ? [`_${line(spam)}_`] : []),
  ];
  const fields: string[] = [];
  let used = 0;
  for (const field of notice.fields.slice(0, SHOWN.fields)) {
    const entry = `**${fit(field.name, SHOWN.fieldName, escapeMattermost, SHORT_CUT_MARKER)}:** ${fit(keepIndent(field.value), SHOWN.fieldValue, escapeMattermost)}`;
    if (used + entry.length + 1 > SHOWN.allFields) break;
    used += entry.length + 1;
    fields.push(entry);
  }
  const more = notice.fields.length - fields.length;
  const tail = [
    ...fields,
    ...(more > 0 ? [`_${more} more field${more === 1 ? '' : 's'} in the console._`] : []),
    ...(notice.files.length
      ? [`**Files:** ${fit(notice.files.map((file) => `${file.name} (${sizeInWords(file.size)})`).join(', '), SHOWN.files, escapeMattermost)}`]
      : []),
    // The service's own link; a parenthesis would end its URL.
    `[Open in the console](${notice.consoleUrl.replaceAll('(', '%28').replaceAll(')', '%29')})`,
  ];
  const before = `${head.join('\n')}\n\n`;
  const after = `\n\n${tail.join('\n')}`;
  return { text: before + fit(keepIndent(notice.message), MATTERMOST_MAX_TEXT - before.length - after.length, escapeMattermost) + after };
}
