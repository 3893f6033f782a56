// Each chat platform's message for a submission, checked against that platform's documented schema
// and limits (test/support/chat-schemas.ts): with a visitor's hostile text (mentions, markup, forged
// links, HTML, Telegram commands) it is accepted and inert, the text still there to read; with the
// largest submission the API takes it stays within every limit, cut with the marker.
import { describe, expect, it } from 'vitest';
import { chatNotice, type ChatNotice } from '../../../src/workers/webhooks/chat/chat-notice.ts';
import { chatBody, CHAT_MAX_BODY_BYTES } from '../../../src/workers/webhooks/chat/chat-request.ts';
import { CUT_MARKER } from '../../../src/workers/webhooks/chat/chat-text.ts';
import { TEAMS_MAX_BYTES } from '../../../src/workers/webhooks/chat/teams.ts';
import {
  discordProblems,
  mattermostProblems,
  slackProblems,
  slackUnescape,
  teamsProblems,
  telegramBotCommands,
  telegramProblems,
  withoutWordJoiners,
} from '../../support/chat-schemas.ts';

const PUBLIC_URL = 'https://forms.example.com';
const ID = '0b7c6f2e-8d3a-4c1b-9e5f-2a4d6c8e0f13';
const CONSOLE = `${PUBLIC_URL}/owner/submissions/${ID}`;

const HOSTILE_MESSAGE = [
  '@everyone @here @channel @all <!channel> <!here> <!everyone> <@U024BE7LH> <@&987654321> <#C024BE7LH> <!subteam^S123>',
  '[click](http://evil.example) <http://evil.example|click> https://evil.example/plain www.evil.example',
  '**bold** __under__ _it_ *it* ~~strike~~ ~strike~ `code` ```block``` ||spoiler|| $$x^2$$ :smile: <t:1700000000:R>',
  '# Heading',
  '-# subtext',
  '> quoted',
  '    indented like code',
  '- a list',
  '1. numbered',
  '| a | table |',
  '<b>bold</b> <at>Ada</at> <script>alert(1)</script> &amp; & &lt;',
  '/start /ban@somebot @ada_lovelace #hashtag $USD',
  'order\u202efdp.exe and a tab\there',
].join('\n');

function submission(overrides: Partial<Parameters<typeof chatNotice>[0]> = {}): Parameters<typeof chatNotice>[0] {
  return {
    id: ID,
    email: 'mallory@example.com',
    subject: 'Hi @channel <!everyone> [x](http://evil.example) **now**',
    message: HOSTILE_MESSAGE,
    customFields: [
      ['name', 'Mallory @here <@U1>'],
      ['company', '<!channel> [a](http://evil.example) <b>x</b>'],
      ['`code`', '**x** /start'],
    ],
    spamVerdict: null,
    spamScore: null,
    spamMark: null,
    test: false,
    createdAt: new Date('2026-11-28T10:00:00Z'),
    key: { label: 'Shop *form*', emailFieldOrder: [], emailHiddenFields: [] },
    ...overrides,
  };
}

const FILES = [{ name: '[f](http://evil.example).pdf', size: 48_213 }];

const FORMATS: Array<{ kind: 'slack' | 'discord' | 'teams' | 'mattermost' | 'telegram'; problems: (body: any) => string[] }> = [
  { kind: 'slack', problems: (body) => slackProblems(body, CONSOLE) },
  { kind: 'discord', problems: discordProblems },
  { kind: 'teams', problems: teamsProblems },
  { kind: 'mattermost', problems: (body) => mattermostProblems(body, CONSOLE) },
  { kind: 'telegram', problems: (body) => telegramProblems(body, CONSOLE) },
];

const bodyOf = (kind: (typeof FORMATS)[number]['kind'], notice: ChatNotice): any => chatBody({ kind, chatId: '-1001234567890' }, notice);

/** Every string of a body, joined: what the platform has to show. */
function strings(value: unknown): string {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) return value.map(strings).join('\n');
  if (value && typeof value === 'object') return Object.values(value).map(strings).join('\n');
  return '';
}

/** What a reader sees of the text, escapes taken out. */
function readable(kind: string, body: any): string {
  const text = strings(body);
  if (kind === 'slack') return withoutWordJoiners(slackUnescape(text));
  if (kind === 'discord' || kind === 'mattermost') return withoutWordJoiners(text.replace(/\\([^\sA-Za-z0-9])/g, '$1'));
  return withoutWordJoiners(text);
}

describe('chat messages of a hostile submission', () => {
  const notice = chatNotice(submission(), FILES, PUBLIC_URL);

  for (const { kind, problems } of FORMATS) {
    it(`${kind}: fits the platform's schema and limits, and nothing in it can mention, link or format`, () => {
      const body = bodyOf(kind, notice);
      expect(problems(body)).toEqual([]);
      // The words are there to read, as text.
      const shown = readable(kind, body);
      for (const words of [
        '@everyone',
        '<!channel>',
        '[click](http://evil.example)',
        '<http://evil.example|click>',
        '<b>bold</b>',
        '/start',
        'mallory@example.com',
      ]) {
        expect(shown).toContain(words);
      }
      expect(shown).toContain('Mallory @here');
      expect(shown).not.toContain('\u202e');
      expect(JSON.stringify(body)).toContain(CONSOLE);
    });
  }

  it('discord: asks Discord to parse no mention at all', () => {
    expect(bodyOf('discord', notice).allowed_mentions).toEqual({ parse: [] });
  });

  it("telegram: leaves no bot command by Telegram's own rule, also after punctuation, and keeps URLs whole", () => {
    const spellings = '(/start) "/kick@group_admin_bot" ,/ban /start@x_y_z_bot. x/notacommand https://shop.example/start';
    // The rule finds them in the raw text: the check can fail.
    expect(telegramBotCommands(spellings)).toEqual(['/start', '/kick@group_admin_bot', '/ban', '/start@x_y_z_bot']);
    const body = bodyOf('telegram', { ...notice, message: spellings, subject: '(/subject)', fields: [{ name: '[/field', value: '-/value' }] });
    expect(telegramBotCommands(body.text)).toEqual([]);
    expect(withoutWordJoiners(body.text)).toContain(spellings);
    expect(body.text).toContain('https://shop.example/start');
  });

  it('telegram: sends no parse_mode, only its own entities, and no link preview', () => {
    const body = bodyOf('telegram', notice);
    expect(body.parse_mode).toBeUndefined();
    expect(body.link_preview_options).toEqual({ is_disabled: true });
    expect(new Set(body.entities.map((entity: { type: string }) => entity.type))).toEqual(new Set(['bold', 'text_link']));
    const link = (body.entities as Array<{ type: string; offset: number; length: number }>).find((entity) => entity.type === 'text_link')!;
    expect(body.text.slice(link.offset, link.offset + link.length)).toBe('Open in the console');
  });

  it('says a message held as spam was held, where the key sends spam to its webhooks', () => {
    const held = chatNotice(submission({ spamVerdict: 'spam', spamScore: 9.5 }), [], PUBLIC_URL);
    for (const { kind, problems } of FORMATS) {
      const body = bodyOf(kind, held);
      expect(problems(body), kind).toEqual([]);
      expect(readable(kind, body), kind).toContain('Held as spam (score 9.5)');
    }
  });
});

describe("chat messages and the key's email layout", () => {
  it('show the fields in the order the email shows them, without the hidden ones', () => {
    const customFields: Array<[string, string]> = [
      ['name', 'Ana'],
      ['utm_source', 'newsletter'],
      ['company', 'Shop'],
      ['phone', '555 0100'],
    ];
    const notice = chatNotice(
      submission({ customFields, key: { label: null, emailFieldOrder: ['phone', 'company'], emailHiddenFields: ['utm_source'] } }),
      [],
      PUBLIC_URL,
    );
    expect(notice.fields.map((field) => field.name)).toEqual(['phone', 'company', 'name']);
  });
});

describe('chat messages of the largest submission', () => {
  // What the API takes at most: a 100,000-character message, 100 fields of a 200-character name and
  // a 100 KB value. Punctuation (escaped, so twice as long), three-byte characters and emoji.
  const piece = '<*>[x](y) 漢字テスト 🎉 @here ';
  const long = (length: number) => piece.repeat(Math.ceil(length / piece.length)).slice(0, length);
  const largest = chatNotice(
    submission({
      subject: long(998),
      message: long(100_000),
      customFields: Array.from({ length: 100 }, (_, i) => [`${i}${long(199)}`, long(100 * 1024)] as [string, string]),
    }),
    Array.from({ length: 10 }, (_, i) => ({ name: `${i}${long(250)}`, size: 10 * 1024 * 1024 })),
    PUBLIC_URL,
  );

  for (const { kind, problems } of FORMATS) {
    it(`${kind}: within every limit, the message cut with the marker, the body at most ${CHAT_MAX_BODY_BYTES} bytes`, () => {
      const body = bodyOf(kind, largest);
      expect(problems(body)).toEqual([]);
      expect(strings(body)).toContain(CUT_MARKER);
      expect(Buffer.byteLength(JSON.stringify(body))).toBeLessThanOrEqual(CHAT_MAX_BODY_BYTES);
    });
  }

  it(`teams: the card stays within ${TEAMS_MAX_BYTES} bytes`, () => {
    expect(Buffer.byteLength(JSON.stringify(bodyOf('teams', largest)))).toBeLessThanOrEqual(TEAMS_MAX_BYTES);
  });
});

describe('the platform checks', () => {
  // They must find what a message built without care would let through, or passing them proves nothing.
  const naive: Record<string, unknown> = {
    slack: { text: HOSTILE_MESSAGE, mrkdwn: false, blocks: [{ type: 'section', text: { type: 'plain_text', text: HOSTILE_MESSAGE } }] },
    discord: { allowed_mentions: { parse: [] }, embeds: [{ title: 'New message', description: `**Hi**\n${HOSTILE_MESSAGE}` }] },
    teams: {
      type: 'message',
      attachments: [
        {
          contentType: 'application/vnd.microsoft.card.adaptive',
          content: { type: 'AdaptiveCard', version: '1.4', body: [{ type: 'TextBlock', text: HOSTILE_MESSAGE }] },
        },
      ],
    },
    mattermost: { text: `${HOSTILE_MESSAGE}\n[Open in the console](${CONSOLE})` },
    telegram: { chat_id: '-1001', text: HOSTILE_MESSAGE, link_preview_options: { is_disabled: true } },
  };
  for (const { kind, problems } of FORMATS) {
    it(`${kind}: find the visitor's markup in a message that does not escape it`, () => {
      expect(problems(naive[kind]).length).toBeGreaterThan(0);
    });
  }
});
