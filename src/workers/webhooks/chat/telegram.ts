// A submission as a Telegram Bot API `sendMessage`: plain text without `parse_mode`, so nothing in
// it is read as Markdown or HTML, and the service's own formatting given as `entities` (bold labels,
// the console link as a `text_link`), whose offsets count UTF-16 code units as JavaScript strings
// do. Telegram still finds @usernames and /commands in any text: the word joiner after a mention's
// `@` (./chat-text.ts) and after a command's `/` (here) leaves none. Link previews are off, so a
// visitor's link is not fetched and shown. Limit (Bot API): 1–4,096 characters of text.
import type { ChatNotice } from './chat-notice.ts';
import { senderLine, sizeInWords, spamLine } from './chat-notice.ts';
import { fit, SHORT_CUT_MARKER, WORD_JOINER } from './chat-text.ts';

export const TELEGRAM_MAX_TEXT = 4096;
const SHOWN = { line: 300, fields: 10, fieldName: 100, fieldValue: 300, allFields: 1200, files: 300 } as const;

type Entity = { type: 'bold' | 'italic' | 'text_link'; offset: number; length: number; url?: string };

/**
 * Every `/` Telegram would read as the start of a bot command, by its own rule (tdlib's
 * match_bot_commands): followed by a letter, digit or `_`, and not after a letter, a digit, `_`, `/`,
 * `<` or `>`. So `(/start)`, `"/kick@bot"` and `,/ban` count, while a URL's path does not. The word
 * joiner after it leaves no command name.
 */
const defuseCommands = (value: string) => value.replace(/(?<![\p{L}\p{N}_/<>])\/(?=[A-Za-z0-9_])/gu, `/${WORD_JOINER}`);

/** Text put together piece by piece, with the entities of the pieces that have one. */
class Composer {
  text = '';
  readonly entities: Entity[] = [];
  add(piece: string, entity?: Omit<Entity, 'offset' | 'length'>): this {
    if (entity && piece) this.entities.push({ ...entity, offset: this.text.length, length: piece.length });
    this.text += piece;
    return this;
  }
}

export function telegramMessage(notice: ChatNotice, chatId: string) {
  const line = (value: string) => fit(defuseCommands(value), SHOWN.line, undefined, SHORT_CUT_MARKER);
  const head = new Composer()
    .add(line(notice.headline), { type: 'bold' })
    .add('\n')
    .add('Subject: ', { type: 'bold' })
    .add(line(notice.subject))
    .add('\n')
    .add('From: ', { type: 'bold' })
    .add(line(senderLine(notice)));
  const spam = spamLine(notice);
  if (spam) head.add('\n').add(spam, { type: 'italic' });
  head.add('\n\n');

  const tail = new Composer();
  let used = 0;
  let shown = 0;
  for (const field of notice.fields.slice(0, SHOWN.fields)) {
    const name = fit(defuseCommands(field.name), SHOWN.fieldName, undefined, SHORT_CUT_MARKER);
    const value = fit(defuseCommands(field.value), SHOWN.fieldValue);
    if (used + name.length + value.length + 3 > SHOWN.allFields) break;
    used += name.length + value.length + 3;
    // A blank line between the message and the fields.
    tail
      .add(shown === 0 ? '\n\n' : '\n')
      .add(`${name}:`, { type: 'bold' })
      .add(` ${value}`);
    shown += 1;
  }
  const more = notice.fields.length - shown;
  if (more > 0) tail.add('\n').add(`${more} more field${more === 1 ? '' : 's'} in the console.`, { type: 'italic' });
  if (notice.files.length) {
    const list = notice.files.map((file) => `${file.name} (${sizeInWords(file.size)})`).join(', ');
    tail
      .add('\n')
      .add('Files: ', { type: 'bold' })
      .add(fit(defuseCommands(list), SHOWN.files));
  }
  tail.add('\n\n').add('Open in the console', { type: 'text_link', url: notice.consoleUrl });

  const message = fit(defuseCommands(notice.message), TELEGRAM_MAX_TEXT - head.text.length - tail.text.length);
  const offset = head.text.length + message.length;
  return {
    chat_id: chatId,
    text: head.text + message + tail.text,
    entities: [...head.entities, ...tail.entities.map((entity) => ({ ...entity, offset: entity.offset + offset }))],
    link_preview_options: { is_disabled: true },
  };
}
