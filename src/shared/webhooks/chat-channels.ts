// Chat channels: webhook endpoints whose requests are written in a chat platform's own format
// (Slack, Discord, Microsoft Teams, Mattermost, Telegram) instead of the signed generic event. The
// owner gives an incoming-webhook URL, or for Telegram a bot token and a chat id; either is a
// credential (whoever holds it can post to the channel), so it is kept sealed under SECRET and
// shown back only shortened. What is checked here, without I/O, before a channel is saved.
import { refuseAtCreation, type AddressPolicy } from './address-guard.ts';
import { KeyRuleError } from '../keys/keys.ts';
import { URL_CHAT_KINDS, type ChatKind, type UrlChatKind } from './endpoint-kinds.ts';

export { CHAT_KINDS, ENDPOINT_KINDS, isChatKind, URL_CHAT_KINDS, type ChatKind, type EndpointKind, type UrlChatKind } from './endpoint-kinds.ts';

export const isUrlChatKind = (kind: string): kind is UrlChatKind => (URL_CHAT_KINDS as readonly string[]).includes(kind);

export const CHAT_NAMES: Record<ChatKind, string> = {
  slack: 'Slack',
  discord: 'Discord',
  teams: 'Microsoft Teams',
  mattermost: 'Mattermost',
  telegram: 'Telegram',
};

/** Chat channels per key, apart from the generic webhooks' own cap: a submission makes at most one request to each. */
export const MAX_CHAT_CHANNELS = 3;

/** A new chat channel as the owner gives it. */
export type NewChatChannel = { kind: UrlChatKind; url: string } | { kind: 'telegram'; botToken: string; chatId: string };

/** A chat channel ready to save: its credential (sealed by the caller), what the owner is shown of it, and a Telegram chat id. */
export type ChatChannelRecord = { kind: ChatKind; credential: string; shown: string; chatId: string | null };

const MAX_URL_LENGTH = 2048;
/** A bot token as @BotFather hands it out: the bot's numeric id, a colon, and a secret of letters, digits, `_` and `-`. */
const TELEGRAM_TOKEN = /^(\d{1,20}):([A-Za-z0-9_-]{30,100})$/;
/** A chat's numeric id (negative for groups and channels), or a public channel's @username. */
const TELEGRAM_CHAT_ID = /^(-?\d{1,20}|@[A-Za-z][A-Za-z0-9_]{3,31})$/;

const invalid = (field: string, why: string) => new KeyRuleError('invalid', field, why);

/**
 * An incoming-webhook URL: http(s), no credentials in it, a host not refused already (the SSRF
 * guard judges names again at each delivery), at most 2,048 characters. Any host is accepted, since
 * Mattermost is self-hosted and the others have regional and government hosts of their own.
 */
export function parseChatUrl(input: unknown, policy: AddressPolicy): string {
  const bad = (why: string) => invalid('url', `Not a usable incoming-webhook URL: ${why}.`);
  if (typeof input !== 'string' || input.trim() === '') throw bad('paste the URL the chat gave you, starting with https://');
  if (input.length > MAX_URL_LENGTH) throw bad(`at most ${MAX_URL_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(input.trim());
  } catch {
    throw bad('paste the URL the chat gave you, starting with https://');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw bad('only http:// and https:// are supported');
  if (url.username || url.password) throw bad('no user name or password in the URL');
  const refused = refuseAtCreation(url.hostname, policy);
  if (refused) throw invalid('url', refused.message);
  url.hash = '';
  return url.toString();
}

/**
 * What the owner is shown of an incoming-webhook URL: its origin and path, the last part of the path
 * (where Slack, Discord and Mattermost keep the secret) cut to its last 4 characters, and no query
 * (where Teams keeps its signature).
 */
export function shortenedUrl(url: string): string {
  const parsed = new URL(url);
  const parts = parsed.pathname.split('/');
  const last = parts.at(-1) ?? '';
  if (last.length > 8) parts[parts.length - 1] = `…${last.slice(-4)}`;
  return `${parsed.origin}${parts.join('/')}${parsed.search ? '?…' : ''}`;
}

/** A bot token shown as its bot id and the token's last 4 characters. */
export const shortenedToken = (token: string) => `${token.split(':')[0]}:…${token.slice(-4)}`;

export function parseTelegramToken(input: unknown): string {
  const token = typeof input === 'string' ? input.trim() : '';
  if (!TELEGRAM_TOKEN.test(token))
    throw invalid('bot_token', 'Not a Telegram bot token: give the token @BotFather sent, like 123456789:AA… (digits, a colon, then letters and digits).');
  return token;
}

export function parseTelegramChatId(input: unknown): string {
  const chatId = typeof input === 'string' ? input.trim() : typeof input === 'number' && Number.isSafeInteger(input) ? String(input) : '';
  if (!TELEGRAM_CHAT_ID.test(chatId))
    throw invalid('chat_id', 'Not a Telegram chat id: give the chat’s number (a group’s starts with -) or a public channel’s @name.');
  return chatId;
}

/** The Bot API method a Telegram channel calls, under TELEGRAM_API_URL. */
export const telegramSendUrl = (apiBase: string, token: string) => `${apiBase.replace(/\/+$/, '')}/bot${token}/sendMessage`;

/** Checks a new channel and says what is kept of it; `telegramApi` is TELEGRAM_API_URL. */
export function chatChannelRecord(channel: NewChatChannel, policy: AddressPolicy, telegramApi: string): ChatChannelRecord {
  if (channel.kind === 'telegram') {
    const token = parseTelegramToken(channel.botToken);
    const chatId = parseTelegramChatId(channel.chatId);
    return { kind: 'telegram', credential: token, shown: telegramSendUrl(telegramApi, shortenedToken(token)), chatId };
  }
  const url = parseChatUrl(channel.url, policy);
  return { kind: channel.kind, credential: url, shown: shortenedUrl(url), chatId: null };
}
