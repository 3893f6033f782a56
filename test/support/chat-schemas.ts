// What each chat platform accepts, written from its documentation, and what would let a visitor's
// text act there: each check returns the problems it finds in a request body (none: accepted and
// inert). The stand-ins (./chat-stand-ins.ts) refuse a body with problems as the platform would;
// the unit tests run the same checks on the formats directly.
//   Slack: Block Kit reference (header text 150, section text 3,000, section fields 10 of 2,000,
//     context elements 10, 50 blocks; message text truncated past 40,000) and the formatting
//     reference (`&`, `<`, `>` are control characters, to be escaped as entities).
//   Discord: Execute Webhook and the embed limits (content 2,000; 10 embeds; title 256, description
//     4,096, 25 fields of 256 and 1,024, footer 2,048, author name 256, 6,000 in all);
//     `allowed_mentions.parse` lists what may ping.
//   Teams: incoming webhooks / Workflows take `{type: "message", attachments: [Adaptive Card]}`,
//     about 28 KB a message; TextRun never reads markdown, mentions need `msteams.entities`.
//   Mattermost: incoming webhook `text` (markdown), at most 16,383 characters; mentions in the text notify.
//   Telegram: sendMessage `chat_id`, `text` of 1–4,096 characters, `entities` (offset and length in
//     UTF-16 code units) instead of `parse_mode`.

type Json = any;

const WJ = '\u2060';
/** A mention a visitor could make: `@name` where a word starts, with no word joiner after the `@`. */
const MENTION = /(^|[^\p{L}\p{N}_])@(?!\u2060)[\p{L}\p{N}_]/u;
const BROADCAST = /@(?!\u2060)(everyone|here|channel|all)\b/i;

const isUrl = (value: unknown) => typeof value === 'string' && URL.canParse(value) && /^https?:$/.test(new URL(value).protocol);
const len = (value: unknown) => (typeof value === 'string' ? value.length : -1);

function limit(problems: string[], where: string, value: unknown, max: number, min = 1): void {
  if (typeof value !== 'string') problems.push(`${where}: not a string`);
  else if (value.length < min) problems.push(`${where}: shorter than ${min}`);
  else if (value.length > max) problems.push(`${where}: ${value.length} characters, more than ${max}`);
}

function mentions(problems: string[], where: string, text: string): void {
  if (MENTION.test(text)) problems.push(`${where}: a mention: ${MENTION.exec(text)![0]}`);
  if (BROADCAST.test(text)) problems.push(`${where}: a broadcast mention`);
}

// Slack -----------------------------------------------------------------------------------------

const SLACK_TEXT_TYPES = new Set(['plain_text', 'mrkdwn']);

/** A Slack text with only the three entities; `<`, `>` or a bare `&` would be read as markup. */
function slackEscaped(problems: string[], where: string, text: string): void {
  if (/[<>]/.test(text)) problems.push(`${where}: a raw < or > (markup): ${text.slice(0, 80)}`);
  if (/&(?!amp;|lt;|gt;)/.test(text)) problems.push(`${where}: a bare &`);
  mentions(problems, where, slackUnescape(text));
}

export const slackUnescape = (text: string) => text.replaceAll('&lt;', '<').replaceAll('&gt;', '>').replaceAll('&amp;', '&');

export function slackProblems(body: Json, consoleUrl?: string): string[] {
  const problems: string[] = [];
  if (!body || typeof body !== 'object') return ['not a JSON object'];
  for (const key of Object.keys(body)) if (!['text', 'blocks', 'mrkdwn'].includes(key)) problems.push(`unexpected field ${key}`);
  limit(problems, 'text', body.text, 40_000);
  if (typeof body.text === 'string') slackEscaped(problems, 'text', body.text);
  if (body.mrkdwn !== false) problems.push('text is read as mrkdwn (mrkdwn is not false)');
  if (!Array.isArray(body.blocks) || body.blocks.length === 0 || body.blocks.length > 50) return [...problems, 'blocks: 1 to 50 wanted'];
  const textObject = (where: string, object: Json, max: number) => {
    if (!object || !SLACK_TEXT_TYPES.has(object.type)) return problems.push(`${where}: not a text object`);
    limit(problems, `${where}.text`, object.text, max);
    if (object.type === 'mrkdwn') {
      // The one mrkdwn text is the service's link to the console.
      if (object.text !== `<${consoleUrl ?? ''}|Open in the console>`) problems.push(`${where}: mrkdwn other than the console link: ${object.text}`);
      return;
    }
    if (typeof object.text === 'string') slackEscaped(problems, `${where}.text`, object.text);
  };
  body.blocks.forEach((block: Json, index: number) => {
    const where = `blocks[${index}]`;
    if (block.type === 'header') {
      if (block.text?.type !== 'plain_text') problems.push(`${where}: a header's text must be plain_text`);
      textObject(`${where}.text`, block.text, 150);
    } else if (block.type === 'section') {
      if (block.text === undefined && block.fields === undefined) problems.push(`${where}: a section needs text or fields`);
      if (block.text !== undefined) textObject(`${where}.text`, block.text, 3000);
      if (block.fields !== undefined) {
        if (!Array.isArray(block.fields) || block.fields.length === 0 || block.fields.length > 10) problems.push(`${where}.fields: 1 to 10 wanted`);
        else block.fields.forEach((field: Json, i: number) => textObject(`${where}.fields[${i}]`, field, 2000));
      }
    } else if (block.type === 'context') {
      if (!Array.isArray(block.elements) || block.elements.length === 0 || block.elements.length > 10) problems.push(`${where}.elements: 1 to 10 wanted`);
      else block.elements.forEach((element: Json, i: number) => textObject(`${where}.elements[${i}]`, element, 3000));
    } else problems.push(`${where}: unexpected block type ${block.type}`);
  });
  return problems;
}

// Discord ---------------------------------------------------------------------------------------

/**
 * Discord markdown a visitor's text could make: what is left once backslash escapes are taken out
 * and the service's own bold first line is set aside.
 */
function discordMarkup(problems: string[], where: string, text: string): void {
  const bare = text.replace(/\\[^\sA-Za-z0-9]/g, '·');
  const checks: Array<[RegExp, string]> = [
    [/\[[^\]]*\]\([^)]*\)/, 'a masked link'],
    [/<[@#!:&t/a]/, 'a mention, channel, role, emoji or timestamp tag'],
    [/https?:\/\//, 'a link'],
    [/[*_~`|>#[\]<]/, 'markdown punctuation'],
  ];
  for (const [pattern, what] of checks) if (pattern.test(bare)) problems.push(`${where}: ${what}: ${bare.match(pattern)![0]}`);
  mentions(problems, where, bare);
}

export function discordProblems(body: Json): string[] {
  const problems: string[] = [];
  if (!body || typeof body !== 'object') return ['not a JSON object'];
  const allowed = body.allowed_mentions;
  if (!allowed || !Array.isArray(allowed.parse) || allowed.parse.length !== 0 || allowed.users?.length || allowed.roles?.length) {
    problems.push('allowed_mentions must be {parse: []}: anything else lets the text ping');
  }
  if (body.content !== undefined) limit(problems, 'content', body.content, 2000, 0);
  if (body.username !== undefined || body.avatar_url !== undefined || body.tts) problems.push('username, avatar_url or tts set');
  if (!Array.isArray(body.embeds) || body.embeds.length === 0 || body.embeds.length > 10) return [...problems, 'embeds: 1 to 10 wanted'];
  let total = 0;
  body.embeds.forEach((embed: Json, index: number) => {
    const where = `embeds[${index}]`;
    const counted = (field: string, value: unknown, max: number, min = 1) => {
      limit(problems, `${where}.${field}`, value, max, min);
      total += Math.max(0, len(value));
    };
    counted('title', embed.title, 256);
    if (embed.url !== undefined && !isUrl(embed.url)) problems.push(`${where}.url: not a URL`);
    counted('description', embed.description, 4096);
    if (embed.author) counted('author.name', embed.author.name, 256);
    if (embed.footer) counted('footer.text', embed.footer.text, 2048);
    if (embed.timestamp !== undefined && Number.isNaN(Date.parse(embed.timestamp))) problems.push(`${where}.timestamp: not ISO 8601`);
    if (embed.fields !== undefined) {
      if (!Array.isArray(embed.fields) || embed.fields.length > 25) problems.push(`${where}.fields: at most 25`);
      else
        embed.fields.forEach((field: Json, i: number) => {
          counted(`fields[${i}].name`, field.name, 256);
          counted(`fields[${i}].value`, field.value, 1024);
          if (typeof field.name === 'string') discordMarkup(problems, `${where}.fields[${i}].name`, field.name);
          if (typeof field.value === 'string') discordMarkup(problems, `${where}.fields[${i}].value`, field.value);
        });
    }
    if (typeof embed.title === 'string') discordMarkup(problems, `${where}.title`, embed.title);
    if (typeof embed.description === 'string') {
      // The service's bold subject: `**…**` on the first line.
      const [first = '', ...rest] = embed.description.split('\n');
      const subject = /^\*\*(.*)\*\*$/.exec(first);
      if (!subject) problems.push(`${where}.description: the first line is not the bold subject`);
      discordMarkup(problems, `${where}.description`, [subject?.[1] ?? first, ...rest].join('\n'));
    }
    for (const plain of [embed.author?.name, embed.footer?.text]) if (typeof plain === 'string') mentions(problems, `${where} (plain text)`, plain);
  });
  if (total > 6000) problems.push(`embeds: ${total} characters in all, more than 6000`);
  return problems;
}

// Microsoft Teams -------------------------------------------------------------------------------

export const TEAMS_DOCUMENTED_MAX_BYTES = 28 * 1024;
const TEAMS_ELEMENTS = new Set(['RichTextBlock', 'Container', 'ColumnSet']);

export function teamsProblems(body: Json): string[] {
  const problems: string[] = [];
  const bytes = Buffer.byteLength(JSON.stringify(body));
  if (bytes > TEAMS_DOCUMENTED_MAX_BYTES) problems.push(`${bytes} bytes, more than 28 KB`);
  if (body?.type !== 'message') problems.push('type must be "message"');
  if (!Array.isArray(body?.attachments) || body.attachments.length !== 1) return [...problems, 'one attachment wanted'];
  const [attachment] = body.attachments;
  if (attachment.contentType !== 'application/vnd.microsoft.card.adaptive') problems.push('contentType: not an Adaptive Card');
  const card = attachment.content;
  if (card?.type !== 'AdaptiveCard') return [...problems, 'content.type must be AdaptiveCard'];
  if (typeof card.version !== 'string' || !/^1\.[0-5]$/.test(card.version)) problems.push(`version ${card.version}: Teams renders 1.0 to 1.5`);
  if (card.msteams?.entities?.length) problems.push('msteams.entities: mentions');
  if (!Array.isArray(card.body) || card.body.length === 0) problems.push('body: empty');
  for (const [index, element] of (card.body ?? []).entries()) {
    // TextBlock and FactSet read markdown; a visitor's text must be in TextRuns only.
    if (!TEAMS_ELEMENTS.has(element.type)) problems.push(`body[${index}]: ${element.type} (reads markdown, or unexpected)`);
    for (const inline of element.inlines ?? []) {
      if (inline.type !== 'TextRun' || typeof inline.text !== 'string' || inline.selectAction)
        problems.push(`body[${index}]: an inline other than a plain TextRun`);
    }
  }
  for (const action of card.actions ?? []) {
    if (action.type !== 'Action.OpenUrl' || !isUrl(action.url)) problems.push(`an action other than Action.OpenUrl to a URL: ${action.type}`);
  }
  return problems;
}

// Mattermost ------------------------------------------------------------------------------------

export function mattermostProblems(body: Json, consoleUrl?: string): string[] {
  const problems: string[] = [];
  if (!body || typeof body !== 'object') return ['not a JSON object'];
  for (const key of Object.keys(body)) if (key !== 'text') problems.push(`unexpected field ${key}`);
  limit(problems, 'text', body.text, 16_383);
  if (typeof body.text !== 'string') return problems;
  const lines = body.text.split('\n');
  const link = lines.pop();
  if (link !== `[Open in the console](${consoleUrl ?? ''})`) problems.push(`the last line is not the console link: ${link}`);
  // The service's labels: `**Label:**` or `**headline**` starting a line, `_note_` lines.
  const visitor = lines
    .map((line: string) => line.replace(/^\*\*(?:[^*\\]|\\.)*?\*\*/, '').replace(/^_(.*)_$/, '$1'))
    .join('\n')
    .replace(/\\[^\sA-Za-z0-9]/g, '·');
  const checks: Array<[RegExp, string]> = [
    [/\[[^\]]*\]\([^)]*\)/, 'a link'],
    [/<[!@#]/, 'a Slack-style mention'],
    [/https?:\/\//, 'a bare link'],
    [/[*_~`|>#[\]<:$]/, 'markdown punctuation'],
    [/^( {4}|\t)/m, 'an indented code block'],
  ];
  for (const [pattern, what] of checks) if (pattern.test(visitor)) problems.push(`text: ${what}: ${visitor.match(pattern)![0]}`);
  // Mattermost finds mentions in the raw text, backslashes or not.
  mentions(problems, 'text', body.text.replaceAll('\\', ' '));
  return problems;
}

// Telegram --------------------------------------------------------------------------------------

const TELEGRAM_ENTITIES = new Set(['bold', 'italic', 'underline', 'strikethrough', 'code', 'pre', 'text_link', 'blockquote', 'spoiler']);

export function telegramProblems(body: Json, consoleUrl?: string): string[] {
  const problems: string[] = [];
  if (!body || typeof body !== 'object') return ['not a JSON object'];
  if (!(typeof body.chat_id === 'string' || Number.isInteger(body.chat_id)) || body.chat_id === '') problems.push('chat_id: an integer or a string wanted');
  limit(problems, 'text', body.text, 4096);
  if (body.parse_mode !== undefined) problems.push('parse_mode set: the text would be read as Markdown or HTML');
  if (body.link_preview_options?.is_disabled !== true) problems.push('link previews are on');
  if (typeof body.text !== 'string') return problems;
  for (const [index, entity] of ((body.entities ?? []) as Array<{ type: string; offset: number; length: number; url?: string }>).entries()) {
    const where = `entities[${index}]`;
    if (!TELEGRAM_ENTITIES.has(entity.type)) problems.push(`${where}: ${entity.type}`);
    if (!Number.isInteger(entity.offset) || !Number.isInteger(entity.length) || entity.length < 1 || entity.offset + entity.length > body.text.length) {
      problems.push(`${where}: outside the text`);
    }
    if (entity.type === 'text_link' && (entity.url !== consoleUrl || body.text.slice(entity.offset, entity.offset + entity.length) !== 'Open in the console')) {
      problems.push(`${where}: a link other than the console's`);
    }
  }
  mentions(problems, 'text', body.text);
  for (const command of telegramBotCommands(body.text)) problems.push(`text: a bot command ${command}`);
  return problems;
}

/** Letters, digits and `_`: what tdlib counts as part of a word around a command. */
const isWordCharacter = (char: string | undefined) => char !== undefined && /^[\p{L}\p{N}_]$/u.test(char);
const isCommandCharacter = (char: string | undefined) => char !== undefined && /^[A-Za-z0-9_]$/.test(char);

/**
 * The bot commands Telegram's clients find in a text, by tdlib's rule (match_bot_commands): a `/`
 * not after a word character, `/`, `<` or `>`; 1–64 letters, digits or `_`; an optional `@` and a
 * bot name of 3–32 such; and no word character, `/`, `<` or `>` right after.
 */
export function telegramBotCommands(text: string): string[] {
  const chars = Array.from(text);
  const commands: string[] = [];
  for (let at = 0; at < chars.length; at += 1) {
    if (chars[at] !== '/') continue;
    const before = chars[at - 1];
    if (isWordCharacter(before) || before === '/' || before === '<' || before === '>') continue;
    let end = at + 1;
    while (isCommandCharacter(chars[end])) end += 1;
    if (end === at + 1 || end - at - 1 > 64) continue;
    if (chars[end] === '@') {
      let name = end + 1;
      while (isCommandCharacter(chars[name])) name += 1;
      if (name - end - 1 < 3 || name - end - 1 > 32) continue;
      end = name;
    }
    const after = chars[end];
    if (isWordCharacter(after) || after === '/' || after === '<' || after === '>') continue;
    commands.push(chars.slice(at, end).join(''));
  }
  return commands;
}

export const withoutWordJoiners = (text: string) => text.replaceAll(WJ, '');
