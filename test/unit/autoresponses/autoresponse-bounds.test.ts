// What bounds the autoresponse apart from its visitor: a key's and an owner's daily bound growing
// with age, the visitor addresses it may carry in its headers, the links its text may hold, and
// the characters no owner text may carry.
import { describe, expect, it } from 'vitest';
import { keyDailyBound, ownerDailyBound } from '../../../src/shared/autoresponses/daily-bounds.ts';
import { linksOutside } from '../../../src/shared/autoresponses/text-links.ts';
import { isPlainAddress } from '../../../src/shared/autoresponses/visitor-address.ts';
import { renderAutoresponse } from '../../../src/shared/autoresponses/render.ts';
import { hasForbiddenInLine, hasForbiddenInText } from '../../../src/shared/keys/owner-text.ts';

const settings = { newKeyPerDay: 20, keyPerDay: 200 };
const now = new Date('2026-12-07T12:00:00Z');
const daysAgo = (days: number) => new Date(now.getTime() - days * 24 * 3600 * 1000);

describe("a key's and an owner's daily bound", () => {
  it.each([
    [0, 20],
    [6.9, 20],
    [7, 40],
    [14, 80],
    [21, 160],
    [28, 200],
    [3650, 200],
  ])('a key %s days old sends %s a day', (days, bound) => expect(keyDailyBound(daysAgo(days), now, false, settings)).toBe(bound));

  it('a key the operator approved has the most from its first day', () => expect(keyDailyBound(daysAgo(0), now, true, settings)).toBe(200));
  it('a key made in the future (a clock step) counts as new', () => expect(keyDailyBound(daysAgo(-3), now, false, settings)).toBe(20));
  it("an owner's keys together send twice their oldest key's bound", () => {
    expect(ownerDailyBound(daysAgo(0), now, false, settings)).toBe(40);
    expect(ownerDailyBound(daysAgo(100), now, false, settings)).toBe(400);
  });
  it("an approved key decides under twice the most, whatever the owner's age", () => expect(ownerDailyBound(daysAgo(0), now, true, settings)).toBe(400));
});

describe('the visitor addresses an autoresponse goes to', () => {
  it.each(['ana@example.org', 'Ana.Maria@example.org', 'j_doe-2@example.org', 'firstname.lastname.de-souza@example.org', 'a@b.example'])(
    '%s is plain',
    (address) => expect(isPlainAddress(address)).toBe(true),
  );
  it.each([
    'x+Account.suspended.call.0800-555-0100.now.to.unlock.it@example.org',
    'ana+shop@example.org',
    'callus.0800.555.0100.now@example.org',
    'a'.repeat(33) + '@example.org',
    '"prize waiting"@example.org',
    'ana..maria@example.org',
    '.ana@example.org',
    'ana=x@example.org',
    'ánä@example.org',
    '@example.org',
  ])('%s is not: it could carry words of the visitor', (address) => expect(isPlainAddress(address)).toBe(false));
});

describe('the links of an autoresponse', () => {
  it("allows links to the key's domains and their subdomains only", () => {
    expect(linksOutside('Hours: https://shop.example/hours. Help: https://help.shop.example/', ['shop.example'])).toEqual([]);
    expect(linksOutside('Hours: https://shop.example.evil.com/', ['shop.example'])).toEqual(['shop.example.evil.com']);
  });
  it.each([
    ['a scheme URL', 'Claim it: https://prize.example.net/now', 'prize.example.net'],
    ['a www. name', 'Visit www.prize-site.test today', 'www.prize-site.test'],
    ['a bare domain name', 'Go to PRIZE-SITE.COM!', 'prize-site.com'],
    ['an address', 'Write to winner@prize-site.com', 'prize-site.com'],
    ['an IP address', 'http://user:pw@203.0.113.9:8080/x', '203.0.113.9'],
    ['an international name', 'http://bücher.de/', 'xn--bcher-kva.de'],
  ])('finds %s', (_what, text, host) => expect(linksOutside(text, [])).toEqual([host]));
  it('takes no version number or abbreviation for a link', () => expect(linksOutside('Version 2.0 is out, e.g. today.', [])).toEqual([]));
});

describe('owner text that reaches other people', () => {
  it.each(['\u202e', '\u2066', '\u2067', '\u2068', '\u2069', '\u200e', '\u200f', '\u061c', '\u202a', '\u0085', '\n', '\u2028'])('a line refuses U+%s', (char) =>
    expect(hasForbiddenInLine(`Thanks${char}gnp.exe`)).toBe(true),
  );
  it('a text keeps its tabs and line breaks but refuses bidi controls', () => {
    expect(hasForbiddenInText('Thanks\n\tsee you')).toBe(false);
    expect(hasForbiddenInText('Thanks \u202eyou')).toBe(true);
  });
  it('keeps emoji sequences, which are joined by U+200D', () => expect(hasForbiddenInLine('Thanks 👩\u200d💻')).toBe(false));
  it('a label saved before the rule reaches no visitor with its bidi controls', () => {
    const email = renderAutoresponse({ subject: 'Thanks', text: 'We got it.', label: 'Shop \u202egnp.exe', receivedAt: now });
    expect(email.text).toContain('through "Shop gnp.exe"');
    expect(email.html).not.toContain('\u202e');
  });
});
