// The request a chat channel's delivery makes: where to (the unsealed incoming-webhook URL, or the
// Telegram Bot API's sendMessage under TELEGRAM_API_URL) and the JSON body in that platform's format.
// The credential is in the URL only: it is never logged, and never part of an error this returns.
import type { ChatKind } from '../../../shared/webhooks/chat-channels.ts';
import { telegramSendUrl } from '../../../shared/webhooks/chat-channels.ts';
import type { ChatNotice } from './chat-notice.ts';
import { discordMessage } from './discord.ts';
import { mattermostMessage } from './mattermost.ts';
import { slackMessage } from './slack.ts';
import { teamsMessage } from './teams.ts';
import { telegramMessage } from './telegram.ts';

/** No chat request body is larger: each format keeps within its platform's limits, far below this. */
export const CHAT_MAX_BODY_BYTES = 64 * 1024;

export type ChatChannel = { kind: ChatKind; chatId: string | null };

export function chatBody(channel: ChatChannel, notice: ChatNotice): object {
  switch (channel.kind) {
    case 'slack':
      return slackMessage(notice);
    case 'discord':
      return discordMessage(notice);
    case 'teams':
      return teamsMessage(notice);
    case 'mattermost':
      return mattermostMessage(notice);
    case 'telegram':
      return telegramMessage(notice, channel.chatId ?? '');
  }
}

/** The URL and body; `credential` is the channel's unsealed URL, or its Telegram bot token. */
export function chatRequest(channel: ChatChannel, credential: string, notice: ChatNotice, telegramApi: string): { url: string; body: string } {
  const body = JSON.stringify(chatBody(channel, notice));
  if (Buffer.byteLength(body) > CHAT_MAX_BODY_BYTES) throw new Error(`the ${channel.kind} message came to more than ${CHAT_MAX_BODY_BYTES} bytes`);
  return { url: channel.kind === 'telegram' ? telegramSendUrl(telegramApi, credential) : credential, body };
}

/**
 * The earliest retry a chat platform asked for in its answer's body, in milliseconds: Telegram's
 * `parameters.retry_after` and Discord's `retry_after`, both in seconds. Undefined when none.
 */
export function retryAfterInBody(body: string): number | undefined {
  try {
    const answer = JSON.parse(body) as { retry_after?: unknown; parameters?: { retry_after?: unknown } };
    const seconds = answer.parameters?.retry_after ?? answer.retry_after;
    return typeof seconds === 'number' && Number.isFinite(seconds) && seconds >= 0 ? Math.ceil(seconds * 1000) : undefined;
  } catch {
    return undefined;
  }
}
