// Chat channels end to end: for each of Slack, Discord, Microsoft Teams, Mattermost and Telegram a
// stand-in on loopback (test/support/chat-stand-ins.ts) checks every request against the platform's
// documented schema and limits. A plain HTML form's hostile submission reaches each one after a
// failure (a 500, or a 429 with the platform's own retry advice, which the retry honours), inert.
// The credential is kept sealed and never shown back; the refusals say why; a channel that keeps
// failing is disabled and its owner emailed; the console adds, lists and deletes channels.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminRequest } from '../support/client.ts';
import { eventually, startHarness, type Harness, type TestKey } from '../support/harness.ts';
import { postForm, signIn } from '../support/owner.ts';
import { slackUnescape, withoutWordJoiners } from '../support/chat-schemas.ts';
import { startChatStandIn, type ChatAnswer, type ChatPlatform, type ChatStandIn } from '../support/chat-stand-ins.ts';
import { describeBuild } from '../../src/shared/infra/version.ts';

const TOKEN = 'test-admin-token-0123456789';
const HOST = '127.0.0.6';
const PLATFORMS: ChatPlatform[] = ['slack', 'discord', 'teams', 'mattermost', 'telegram'];

let h: Harness;
const standIns = {} as Record<ChatPlatform, ChatStandIn>;

beforeAll(async () => {
  for (const platform of PLATFORMS) standIns[platform] = await startChatStandIn(platform, HOST);
  h = await startHarness({
    env: {
      ADMIN_TOKEN: TOKEN,
      WEBHOOK_ALLOW: HOST,
      TELEGRAM_API_URL: standIns.telegram.url,
      WEBHOOK_RETRY_BACKOFF_MS: '100',
      // Room for the platforms' own retry advice (up to 2 s here) to be honoured.
      WEBHOOK_RETRY_MAX_BACKOFF_MS: '5000',
      WEBHOOK_DISABLE_AFTER: '2',
    },
  });
  for (const platform of PLATFORMS) standIns[platform].publicUrl = h.config.PUBLIC_URL;
});
afterAll(async () => {
  for (const standIn of Object.values(standIns)) await standIn.close();
  await h?.stop();
});

const admin = (method: string, path: string, body?: unknown) => adminRequest(h, TOKEN, method, path, body);

/** The request body that adds the stand-in's channel. */
const channelOf = (standIn: ChatStandIn) =>
  standIn.platform === 'telegram' ? { kind: 'telegram', bot_token: standIn.secret, chat_id: '-1001234567890' } : { kind: standIn.platform, url: standIn.url };

async function addChannel(key: TestKey, standIn: ChatStandIn): Promise<{ id: string; url: string }> {
  const added = await admin('POST', `/admin/keys/${key.key}/webhooks`, channelOf(standIn));
  expect(added.status, added.text).toBe(201);
  return added.json.webhook;
}

const HOSTILE = {
  subject: 'Urgent @channel <!everyone> [invoice](http://evil.example/pay)',
  message: [
    '@everyone @here <!channel> <!here> <@U024BE7LH> <@&987654321> <#C024BE7LH>',
    '[click](http://evil.example) <http://evil.example|click> **bold** `code` ||spoiler|| # Heading',
    '<b>bold</b> <at>Ada</at> <script>alert(1)</script> /start /ban@somebot @ada_lovelace',
    // Commands to Telegram after punctuation, not only after a space: (/start) "/kick@group_admin_bot" ,/ban
    '(/start) "/kick@group_admin_bot" ,/ban',
  ].join('\n'),
  name: 'Mallory @here',
  company: '<!channel> [a](http://evil.example)',
};

/** A plain HTML form's POST (urlencoded, no Accept: application/json): the id from the row it made. */
async function submitForm(key: TestKey): Promise<string> {
  const before = Date.now();
  const posted = await postForm(h, '/api/contact-api/', { access_key: key.key, email: 'mallory@example.com', ...HOSTILE }, { accept: 'text/html' });
  expect(posted.status).toBe(303);
  const [row] = await h.sql<{ id: string }>('select id from submissions where key_id = $1 and created_at >= $2 order by created_at desc limit 1', [
    key.id,
    new Date(before - 1000),
  ]);
  return row!.id;
}

const deliveries = async (key: TestKey) => (await admin('GET', `/admin/keys/${key.key}/webhook-deliveries`)).json.deliveries as any[];

/** What a reader of the platform sees, escapes taken out. */
function readable(platform: ChatPlatform, body: unknown): string {
  const all = (value: unknown): string =>
    typeof value === 'string' ? value : value && typeof value === 'object' ? Object.values(value).map(all).join('\n') : '';
  const shown = all(body);
  if (platform === 'slack') return withoutWordJoiners(slackUnescape(shown));
  if (platform === 'discord' || platform === 'mattermost') return withoutWordJoiners(shown.replace(/\\([^\sA-Za-z0-9])/g, '$1'));
  return withoutWordJoiners(shown);
}

/** Each platform's failure before the success, and the least delay it asked for. */
const FAILURES: Record<ChatPlatform, { answer: ChatAnswer; waitsMs: number }> = {
  slack: { answer: { status: 429, headers: { 'retry-after': '1' }, body: 'rate_limited' }, waitsMs: 1000 },
  discord: {
    answer: {
      status: 429,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'You are being rate limited.', retry_after: 1.5, global: false }),
    },
    waitsMs: 1500,
  },
  teams: { answer: { status: 500, body: 'Internal Server Error' }, waitsMs: 0 },
  mattermost: { answer: { status: 503, body: 'Service Unavailable' }, waitsMs: 0 },
  telegram: {
    answer: {
      status: 429,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ok: false, error_code: 429, description: 'Too Many Requests: retry after 2', parameters: { retry_after: 2 } }),
    },
    waitsMs: 2000,
  },
};

describe('chat channels', () => {
  for (const platform of PLATFORMS) {
    it(`${platform}: posts a hostile form submission in the platform's format after a failure, inert, the credential never shown`, async () => {
      const standIn = standIns[platform];
      const key = await h.createKey();
      const channel = await addChannel(key, standIn);
      // Shown shortened: the secret part of the URL, or the token, is not in any answer.
      expect(channel).toMatchObject({ kind: platform, enabled: true, chat_id: platform === 'telegram' ? '-1001234567890' : null });
      expect(channel.url).toContain('…');
      const listed = await admin('GET', `/admin/keys/${key.key}/webhooks`);
      for (const answer of [JSON.stringify(channel), listed.text]) expect(answer).not.toContain(standIn.secret);
      const [stored] = await h.sql<{ secret_sealed: string; url: string }>('select secret_sealed, url from webhook_endpoints where id = $1', [channel.id]);
      expect(stored!.secret_sealed).not.toContain(standIn.secret);
      expect(stored!.url).not.toContain(standIn.secret);

      const { answer, waitsMs } = FAILURES[platform];
      standIn.script.push(answer);
      const before = standIn.calls.length;
      const id = await submitForm(key);
      const delivered = await eventually(
        async () => {
          const [row] = await deliveries(key);
          return row?.status === 'sent' ? row : row?.status === 'failed' ? row : undefined;
        },
        30_000,
        `the ${platform} delivery`,
      );
      expect(delivered, JSON.stringify(delivered)).toMatchObject({ submission_id: id, status: 'sent', attempts: 2, kind: platform });
      const calls = standIn.calls.slice(before);
      expect(calls).toHaveLength(2);
      expect(calls.map((call) => call.problems)).toEqual([[], []]);
      expect(calls.map((call) => call.headers['user-agent'])).toEqual(Array(2).fill(`contact-form-service-webhooks/${describeBuild().version}`));
      // The retry came no sooner than the platform asked.
      expect(calls[1]!.at - calls[0]!.at).toBeGreaterThanOrEqual(waitsMs - 50);

      const shown = readable(platform, calls[1]!.body);
      for (const words of [
        '@everyone',
        '<!channel>',
        '[click](http://evil.example)',
        '<http://evil.example|click>',
        '<b>bold</b>',
        '/start',
        '(/start) "/kick@group_admin_bot" ,/ban',
        'Mallory @here',
        'mallory@example.com',
      ]) {
        expect(shown, words).toContain(words);
      }
      expect(JSON.stringify(calls[1]!.body)).toContain(`${h.config.PUBLIC_URL}/owner/submissions/${id}`);
      // The credential is in no record of the delivery either.
      expect(JSON.stringify(await deliveries(key))).not.toContain(standIn.secret);
      if (platform === 'discord') expect(calls[1]!.body.allowed_mentions).toEqual({ parse: [] });
      if (platform === 'telegram') expect(calls[1]!.body.chat_id).toBe('-1001234567890');
    });
  }

  it('refuses what cannot be a channel, in words that say why, and keeps each kind to its cap', async () => {
    const key = await h.createKey();
    const refusals: Array<[unknown, string, RegExp]> = [
      [{ kind: 'irc', url: 'https://irc.example/' }, 'kind', /kind must be one of webhook, slack, discord, teams, mattermost, telegram/],
      [{ kind: 'slack' }, 'url', /takes kind and url \(its incoming-webhook URL\), nothing else/],
      [{ kind: 'telegram', chat_id: '-100' }, 'bot_token', /A Telegram channel takes kind, bot_token and chat_id/],
      [{ kind: 'slack', url: 'ftp://hooks.slack.com/x' }, 'url', /only http:\/\/ and https:\/\//],
      [{ kind: 'discord', url: 'https://user:pw@discord.com/api/webhooks/1/x' }, 'url', /no user name or password/],
      [{ kind: 'mattermost', url: 'http://127.0.0.7/hooks/x' }, 'url', /refused: 127\.0\.0\.7 is a loopback address/],
      [{ kind: 'telegram', bot_token: 'not-a-token', chat_id: '-100' }, 'bot_token', /Not a Telegram bot token/],
      [{ kind: 'telegram', bot_token: standIns.telegram.secret, chat_id: 'somebody' }, 'chat_id', /Not a Telegram chat id/],
      [{ kind: 'slack', url: standIns.slack.url, secret: 'x' }, 'secret', /takes kind and url \(its incoming-webhook URL\), nothing else/],
    ];
    for (const [body, field, message] of refusals) {
      const refused = await admin('POST', `/admin/keys/${key.key}/webhooks`, body);
      expect(refused.status, JSON.stringify(body)).toBe(400);
      expect(refused.json.errors[field]?.[0], JSON.stringify(refused.json)).toMatch(message);
      // A refusal never repeats a token it was given.
      expect(refused.text).not.toContain(standIns.telegram.secret);
    }
    for (const platform of ['slack', 'discord', 'telegram'] as const) await addChannel(key, standIns[platform]);
    const fourth = await admin('POST', `/admin/keys/${key.key}/webhooks`, channelOf(standIns.teams));
    expect(fourth.status).toBe(400);
    expect(fourth.json.errors.kind).toEqual(['A key has at most 3 chat channels.']);
    // Generic webhooks keep their own cap.
    const generic = await admin('POST', `/admin/keys/${key.key}/webhooks`, { url: `http://${HOST}:9/hook` });
    expect(generic.status).toBe(201);
    expect(generic.json.secret).toMatch(/^whsec_/);
  });

  it('disables a channel after WEBHOOK_DISABLE_AFTER failures in a row and emails its owner, the credential left out', async () => {
    const standIn = standIns.mattermost;
    const key = await h.createKey();
    const channel = await addChannel(key, standIn);
    standIn.script.push({ status: 404, body: 'Unable to find the webhook' }, { status: 404, body: 'Unable to find the webhook' });
    for (const n of [1, 2]) {
      await submitForm(key);
      await eventually(async () => ((await deliveries(key)).filter((row) => row.status === 'failed').length >= n ? true : undefined), 20_000, `failure ${n}`);
    }
    const listed = await eventually(
      async () => {
        const [endpoint] = (await admin('GET', `/admin/keys/${key.key}/webhooks`)).json.webhooks;
        return endpoint.enabled === false ? endpoint : undefined;
      },
      20_000,
      'the channel disabled',
    );
    expect(listed).toMatchObject({ id: channel.id, kind: 'mattermost', consecutive_failures: 2 });
    const notice = await eventually(
      async () => h.sink.messages.find((mail) => mail.envelope.to.includes(key.email) && (mail.parsed.subject ?? '').includes('switched off')),
      20_000,
      'the owner emailed',
    );
    expect(notice.parsed.text).toContain(channel.url);
    expect(notice.parsed.text).not.toContain(standIn.secret);
  });
});

describe('chat channels in the owner console and the owner API', () => {
  it('adds a channel through each form, shows it shortened, refuses a bad token keeping the chat id, and deletes it', async () => {
    const key = await h.createKey({ email: 'chat-owner@example.test' });
    const owner = await signIn(h, key.email);
    const page = `/owner/keys/${key.id}/webhooks`;

    const slack = await owner.post(page, { kind: 'slack', url: standIns.slack.url });
    expect(slack.status).toBe(200);
    expect(slack.text).toContain('Slack channel added');
    expect(slack.text).not.toContain(standIns.slack.secret);

    const badToken = await owner.post(page, { kind: 'telegram', bot_token: 'nope', chat_id: '-1009876' });
    expect(badToken.status).toBe(400);
    expect(badToken.text).toContain('Not a Telegram bot token');
    expect(badToken.text).toContain('value="-1009876"');
    const telegram = await owner.post(page, { kind: 'telegram', bot_token: standIns.telegram.secret, chat_id: '-1009876' });
    expect(telegram.status).toBe(200);

    const shown = await owner.get(page);
    expect(shown.text).toContain('data-kind="slack"');
    expect(shown.text).toContain('data-kind="telegram"');
    expect(shown.text).toContain('-1009876');
    for (const secret of [standIns.slack.secret, standIns.telegram.secret]) expect(shown.text).not.toContain(secret);

    // The owner API lists the same, and adds a Teams channel.
    const listed = await owner.api('GET', `/keys/${key.id}/webhooks`);
    expect(listed.json.webhooks.map((endpoint: { kind: string }) => endpoint.kind)).toEqual(['slack', 'telegram']);
    const teams = await owner.api('POST', `/keys/${key.id}/webhooks`, { kind: 'teams', url: standIns.teams.url });
    expect(teams.status).toBe(201);
    expect(teams.json.secret).toBeUndefined();
    expect(teams.text).not.toContain(standIns.teams.secret);

    const slackId = /data-webhook="([0-9a-f-]{36})" data-kind="slack"/.exec(shown.text)![1]!;
    expect((await owner.post(`${page}/${slackId}`, { action: 'delete' })).status).toBe(303);
    expect(await h.sql('select id from webhook_endpoints where id = $1', [slackId])).toHaveLength(0);

    // Another owner reaches none of it.
    const stranger = await signIn(h, (await h.createKey({ email: 'chat-stranger@example.test' })).email);
    expect((await stranger.post(page, { kind: 'discord', url: standIns.discord.url })).status).toBe(404);
    expect((await stranger.api('POST', `/keys/${key.id}/webhooks`, { kind: 'discord', url: standIns.discord.url })).status).toBe(404);
  });
});
