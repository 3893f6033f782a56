// A submission as a Slack incoming-webhook message: Block Kit blocks with a plain-text fallback.
// Every visitor text is in a `plain_text` object (no mrkdwn, no link or mention syntax is read
// there) and has `&`, `<` and `>` escaped as Slack's formatting reference asks, so `<!channel>`,
// `<@U…>` and `<http://evil|click>` arrive as text. The one mrkdwn object is the service's own
// link to the console. Limits (Slack's Block Kit reference): a header's text 150 characters, a
// section's text 3,000, a section field 2,000 and 10 fields a section, 50 blocks a message.
import type { ChatNotice } from './chat-notice.ts';
import { senderLine, sizeInWords, spamLine } from './chat-notice.ts';
import { fit, SHORT_CUT_MARKER, type Escape } from './chat-text.ts';

export const SLACK_LIMITS = { header: 150, sectionText: 3000, fieldText: 2000, fieldsPerSection: 10, blocks: 50 } as const;
/** How much of the message, of a field and of the fallback this service sends: within the limits above. */
const SHOWN = { message: SLACK_LIMITS.sectionText, facts: 1000, field: 500, fields: SLACK_LIMITS.fieldsPerSection, files: 10, fallback: 300 } as const;

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;' };
export const escapeSlack: Escape = (character) => ENTITIES[character] ?? character;

const plain = (text: string) => ({ type: 'plain_text', text, emoji: false });

export function slackMessage(notice: ChatNotice) {
  const shownFields = notice.fields.slice(0, SHOWN.fields);
  const more = notice.fields.length - shownFields.length;
  const facts = [`From: ${senderLine(notice)}`, `Subject: ${notice.subject}`, spamLine(notice)].filter(Boolean).join('\n');
  const files = notice.files.slice(0, SHOWN.files).map((file) => `${file.name} (${sizeInWords(file.size)})`);
  const blocks: object[] = [
    { type: 'header', text: plain(fit(notice.headline, SLACK_LIMITS.header, escapeSlack, SHORT_CUT_MARKER)) },
    { type: 'section', text: plain(fit(facts, SHOWN.facts, escapeSlack)) },
    { type: 'section', text: plain(fit(notice.message, SHOWN.message, escapeSlack)) },
  ];
  if (shownFields.length) {
    blocks.push({ type: 'section', fields: shownFields.map((field) => plain(fit(`${field.name}: ${field.value}`, SHOWN.field, escapeSlack))) });
  }
  const notes = [
    more > 0 ? `${more} more field${more === 1 ? '' : 's'} in the console.` : '',
    files.length ? `Files: ${files.join(', ')}${notice.files.length > files.length ? `, and ${notice.files.length - files.length} more` : ''}` : '',
  ].filter(Boolean);
  if (notes.length) blocks.push({ type: 'context', elements: [plain(fit(notes.join('\n'), SHOWN.facts, escapeSlack))] });
  // The service's own link: the URL is PUBLIC_URL and ids, escaped all the same (a `|` would end it).
  const link = Array.from(notice.consoleUrl.replaceAll('|', '%7C'), escapeSlack).join('');
  blocks.push({ type: 'context', elements: [{ type: 'mrkdwn', text: `<${link}|Open in the console>` }] });
  return {
    // The notification's text, where blocks are not shown; `mrkdwn: false` has Slack read no formatting in it.
    text: fit(`${notice.headline} from ${senderLine(notice)}: ${notice.subject}`, SHOWN.fallback, escapeSlack, SHORT_CUT_MARKER),
    mrkdwn: false,
    blocks,
  };
}
