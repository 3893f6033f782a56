// A submission as a Microsoft Teams message: an Adaptive Card (version 1.4) in the `attachments` of a
// `message`, the shape Teams' incoming webhooks and the Workflows app's "when a Teams webhook
// request is received" trigger both take. Every text is a `TextRun` in a `RichTextBlock`, which
// Adaptive Cards never read as markdown; Teams renders no HTML in cards and makes no mention without
// an `msteams.entities` entry, and there is none. So `**bold**`, `[click](http://evil)`, `<at>` and
// `<b>` arrive as text. Limit (Teams' webhook documentation): about 28 KB a message; this card
// stays under TEAMS_MAX_BYTES, the message cut shorter until it fits.
import type { ChatNotice } from './chat-notice.ts';
import { senderLine, sizeInWords, spamLine } from './chat-notice.ts';
import { bodyBytes, fit, SHORT_CUT_MARKER } from './chat-text.ts';

/** The whole request body's bytes at most: below Teams' 28 KB with room for what Teams adds. */
export const TEAMS_MAX_BYTES = 24_000;
/** What is shown before the message is cut to fit: each in characters, up to 3 bytes each (and 2 for an escaped `"`). */
const SHOWN = { message: 8000, fields: 20, fieldName: 100, fieldValue: 500, allFields: 2400, line: 300 } as const;

const run = (text: string, style: Record<string, unknown> = {}) => ({ type: 'TextRun', text, ...style });
const rich = (...inlines: object[]) => ({ type: 'RichTextBlock', inlines });

/** The fields in the form's order, as many as fit in SHOWN.allFields. */
function shownFields(notice: ChatNotice): Array<{ name: string; value: string }> {
  const shown = [];
  let used = 0;
  for (const field of notice.fields.slice(0, SHOWN.fields)) {
    const name = fit(field.name, SHOWN.fieldName, undefined, SHORT_CUT_MARKER);
    const value = fit(field.value, SHOWN.fieldValue);
    if (used + name.length + value.length > SHOWN.allFields) break;
    used += name.length + value.length;
    shown.push({ name, value });
  }
  return shown;
}

function card(notice: ChatNotice, messageMax: number) {
  const fields = shownFields(notice);
  const more = notice.fields.length - fields.length;
  const spam = spamLine(notice);
  const body: object[] = [
    rich(run(fit(notice.headline, SHOWN.line, undefined, SHORT_CUT_MARKER), { weight: 'Bolder', size: 'Medium' })),
    rich(run(fit(notice.subject, SHOWN.line, undefined, SHORT_CUT_MARKER), { weight: 'Bolder' })),
    rich(run('From: ', { isSubtle: true }), run(fit(senderLine(notice), SHOWN.line, undefined, SHORT_CUT_MARKER))),
    ...(spam ? [rich(run(spam, { color: 'Attention' }))] : []),
    { ...rich(run(fit(notice.message, messageMax))), separator: true },
    ...fields.map((field) => rich(run(`${field.name}: `, { weight: 'Bolder' }), run(field.value))),
    ...(more > 0 ? [rich(run(`${more} more field${more === 1 ? '' : 's'} in the console.`, { isSubtle: true }))] : []),
    ...(notice.files.length
      ? [rich(run('Files: ', { weight: 'Bolder' }), run(fit(notice.files.map((file) => `${file.name} (${sizeInWords(file.size)})`).join(', '), SHOWN.line)))]
      : []),
  ];
  return {
    type: 'message',
    attachments: [
      {
        contentType: 'application/vnd.microsoft.card.adaptive',
        contentUrl: null,
        content: {
          $schema: 'http://adaptivecards.io/schemas/adaptive-card.json',
          type: 'AdaptiveCard',
          version: '1.4',
          body,
          actions: [{ type: 'Action.OpenUrl', title: 'Open in the console', url: notice.consoleUrl }],
          msteams: { width: 'Full' },
        },
      },
    ],
  };
}

/** The card, its message cut shorter (a tenth at a time) until the body is within TEAMS_MAX_BYTES. */
export function teamsMessage(notice: ChatNotice) {
  let messageMax: number = SHOWN.message;
  let message = card(notice, messageMax);
  while (bodyBytes(message) > TEAMS_MAX_BYTES && messageMax > 100) {
    messageMax = Math.floor(messageMax * 0.9);
    message = card(notice, messageMax);
  }
  return message;
}
