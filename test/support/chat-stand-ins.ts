// A stand-in for each chat platform, on a loopback address: it takes requests where the platform
// would (an incoming-webhook path holding its secret, or Telegram's /bot<token>/sendMessage),
// checks each body against the platform's documented schema and limits (./chat-schemas.ts), and
// answers as the platform does: its success (Slack and Mattermost 200 "ok", Discord 204, Teams 202,
// Telegram 200 {ok: true}), a 400 naming the first problem, a 404 (401 for Telegram) for a wrong
// secret, or the next scripted answer (a 500, a 429 with the platform's own way of saying when to
// come back).
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { discordProblems, mattermostProblems, slackProblems, teamsProblems, telegramProblems } from './chat-schemas.ts';

export type ChatPlatform = 'slack' | 'discord' | 'teams' | 'mattermost' | 'telegram';
export type ChatCall = { at: number; path: string; headers: IncomingHttpHeaders; body: any; problems: string[] };
export type ChatAnswer = { status: number; body?: string; headers?: Record<string, string> };

export type ChatStandIn = {
  platform: ChatPlatform;
  /** What the owner pastes: the incoming-webhook URL (Telegram: the Bot API's base, for TELEGRAM_API_URL). */
  url: string;
  /** The secret the URL holds (Telegram: the bot token). */
  secret: string;
  calls: ChatCall[];
  /** Answers to give, in order, before the platform's success. */
  script: ChatAnswer[];
  /** The service's PUBLIC_URL: each message must link to `<it>/owner/submissions/<id>`, a test post to `<it>/owner/keys/<id>/webhooks` (set it once the service is up). */
  publicUrl: string;
  close: () => Promise<void>;
};

const text = (status: number, body: string): ChatAnswer => ({ status, body, headers: { 'content-type': 'text/plain' } });
const json = (status: number, body: unknown): ChatAnswer => ({ status, body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });

const SUCCESS: Record<ChatPlatform, ChatAnswer> = {
  slack: text(200, 'ok'),
  discord: { status: 204 },
  teams: { status: 202 },
  mattermost: text(200, 'ok'),
  telegram: json(200, { ok: true, result: { message_id: 1, date: 0, chat: { id: -1, type: 'supergroup' } } }),
};

function refusal(platform: ChatPlatform, problem: string): ChatAnswer {
  switch (platform) {
    case 'slack':
      return text(400, `invalid_payload: ${problem}`);
    case 'discord':
      return json(400, { code: 50035, message: `Invalid Form Body: ${problem}` });
    case 'teams':
      return text(400, `Bad payload: ${problem}`);
    case 'mattermost':
      return json(400, { id: 'web.incoming_webhook.parse.app_error', message: problem, status_code: 400 });
    case 'telegram':
      return json(400, { ok: false, error_code: 400, description: `Bad Request: ${problem}` });
  }
}

const UNKNOWN: Record<ChatPlatform, ChatAnswer> = {
  slack: text(404, 'no_service'),
  discord: json(404, { code: 10015, message: 'Unknown Webhook' }),
  teams: text(404, 'not found'),
  mattermost: json(404, { message: 'Unable to find the webhook', status_code: 404 }),
  telegram: json(401, { ok: false, error_code: 401, description: 'Unauthorized' }),
};

/** Where the platform keeps the secret in its URL. */
function pathOf(platform: ChatPlatform, secret: string): string {
  switch (platform) {
    case 'slack':
      return `/services/T0001/B0001/${secret}`;
    case 'discord':
      return `/api/webhooks/1234567890/${secret}`;
    case 'teams':
      return `/workflows/0f1e2d3c/triggers/manual/paths/invoke?api-version=2016-06-01&sp=%2Ftriggers%2Fmanual%2Frun&sv=1.0&sig=${secret}`;
    case 'mattermost':
      return `/hooks/${secret}`;
    case 'telegram':
      return `/bot${secret}/sendMessage`;
  }
}

export async function startChatStandIn(platform: ChatPlatform, host: string): Promise<ChatStandIn> {
  const secret = platform === 'telegram' ? `7012345678:${randomBytes(26).toString('base64url')}` : randomBytes(18).toString('base64url');
  const calls: ChatCall[] = [];
  const script: ChatAnswer[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const answer = (() => {
        if (request.method !== 'POST' || request.url !== pathOf(platform, secret)) return UNKNOWN[platform];
        if (!(request.headers['content-type'] ?? '').startsWith('application/json')) return refusal(platform, 'not JSON');
        let body: any;
        try {
          body = JSON.parse(raw);
        } catch {
          return refusal(platform, 'not JSON');
        }
        // A message links to its page; a test post from the console, which has none, to the key's webhooks page.
        const path = /\/owner\/(?:submissions\/[0-9a-f-]{36}|keys\/[0-9a-f-]{36}\/webhooks)/.exec(raw)?.[0];
        const problems = path ? check(platform, body, `${standIn.publicUrl}${path}`) : ['no link to the message in the console'];
        calls.push({ at: Date.now(), path: request.url, headers: request.headers, body, problems });
        if (problems.length) return refusal(platform, problems[0]!);
        return script.shift() ?? SUCCESS[platform];
      })();
      response.writeHead(answer.status, answer.headers).end(answer.body ?? '');
    });
  });
  server.listen(0, host);
  await once(server, 'listening');
  const origin = `http://${host}:${(server.address() as AddressInfo).port}`;
  const standIn: ChatStandIn = {
    platform,
    url: platform === 'telegram' ? origin : `${origin}${pathOf(platform, secret)}`,
    secret,
    calls,
    script,
    publicUrl: '',
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
  return standIn;

  function check(kind: ChatPlatform, body: any, consoleUrl: string | undefined): string[] {
    switch (kind) {
      case 'slack':
        return slackProblems(body, consoleUrl);
      case 'discord':
        return discordProblems(body);
      case 'teams':
        return teamsProblems(body);
      case 'mattermost':
        return mattermostProblems(body, consoleUrl);
      case 'telegram':
        return telegramProblems(body, consoleUrl);
    }
  }
}
