// A submission as a Discord webhook message: one embed, and `allowed_mentions` with an empty
// `parse` list, so that nothing in the message can ping anyone. In the embed's title, description
// and fields (where Discord reads markdown) every ASCII punctuation character of a visitor's text
// is escaped with a backslash: no `**bold**`, `[click](http://evil)`, `<@id>`, `# heading`, spoiler
// or code from the visitor's words, and no bare link either (its `:` is escaped). The author name and
// the footer are shown as plain text by Discord and carry the text as it is. Limits (Discord's
// embed limits): title 256 characters, description 4,096, up to 25 fields of 256 (name) and 1,024
// (value), footer 2,048, author name 256, and 6,000 for all of these together.
import type { ChatNotice } from './chat-notice.ts';
import { senderLine, sizeInWords, spamLine } from './chat-notice.ts';
import { fit, SHORT_CUT_MARKER, type Escape } from './chat-text.ts';

export const DISCORD_LIMITS = {
  title: 256,
  description: 4096,
  fields: 25,
  fieldName: 256,
  fieldValue: 1024,
  footer: 2048,
  authorName: 256,
  total: 6000,
} as const;
/** This service's shares of the 6,000: 256 + 3,300 + 256 + 1,800 + 300 = 5,912. */
const SHOWN = { description: 3300, fields: 15, fieldName: 100, fieldValue: 300, allFields: 1800, footer: 300 } as const;

export const escapeDiscord: Escape = (character) => (/^[!-/:-@[-`{-~]$/.test(character) ? `\\${character}` : character);

export function discordMessage(notice: ChatNotice) {
  const subject = fit(notice.subject, 500, escapeDiscord, SHORT_CUT_MARKER);
  const spam = spamLine(notice);
  // The subject in bold (the asterisks are the service's), then the message.
  const head = `**${subject}**\n${spam ? `${fit(spam, 300, escapeDiscord)}\n` : ''}\n`;
  const fields: Array<{ name: string; value: string; inline: boolean }> = [];
  let used = 0;
  for (const field of notice.fields.slice(0, SHOWN.fields)) {
    const name = fit(field.name, SHOWN.fieldName, escapeDiscord, SHORT_CUT_MARKER);
    const value = fit(field.value, SHOWN.fieldValue, escapeDiscord);
    if (used + name.length + value.length > SHOWN.allFields) break;
    used += name.length + value.length;
    fields.push({ name, value, inline: value.length <= 40 });
  }
  const more = notice.fields.length - fields.length;
  const footer = [
    more > 0 ? `${more} more field${more === 1 ? '' : 's'} in the console` : '',
    notice.files.length
      ? `${notice.files.length} file${notice.files.length === 1 ? '' : 's'}: ${notice.files.map((file) => `${file.name} (${sizeInWords(file.size)})`).join(', ')}`
      : '',
  ]
    .filter(Boolean)
    .join(' · ');
  return {
    allowed_mentions: { parse: [] },
    embeds: [
      {
        title: fit(notice.headline, DISCORD_LIMITS.title, escapeDiscord, SHORT_CUT_MARKER),
        // The title links to the message in the owner console.
        url: notice.consoleUrl,
        author: { name: fit(senderLine(notice), DISCORD_LIMITS.authorName, undefined, SHORT_CUT_MARKER) },
        description: head + fit(notice.message, SHOWN.description - head.length, escapeDiscord),
        ...(fields.length ? { fields } : {}),
        ...(footer ? { footer: { text: fit(footer, SHOWN.footer, undefined, SHORT_CUT_MARKER) } } : {}),
        timestamp: notice.createdAt.toISOString(),
      },
    ],
  };
}
