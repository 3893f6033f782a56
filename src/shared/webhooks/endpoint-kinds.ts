// What a webhook endpoint's requests look like: the signed generic event (`webhook`), or one chat
// platform's own message (src/shared/webhooks/chat-channels.ts). Apart, so that the table's
// definition can name them without importing the rules.
export const ENDPOINT_KINDS = ['webhook', 'slack', 'discord', 'teams', 'mattermost', 'telegram'] as const;
export type EndpointKind = (typeof ENDPOINT_KINDS)[number];
export type ChatKind = Exclude<EndpointKind, 'webhook'>;
/** The chat platforms reached through an incoming-webhook URL (Telegram is reached through its Bot API). */
export const URL_CHAT_KINDS = ['slack', 'discord', 'teams', 'mattermost'] as const;
export type UrlChatKind = (typeof URL_CHAT_KINDS)[number];
export const CHAT_KINDS: readonly ChatKind[] = [...URL_CHAT_KINDS, 'telegram'];

export const isChatKind = (kind: string): kind is ChatKind => (CHAT_KINDS as readonly string[]).includes(kind);
