// The reputation of a submission without the network: what is looked up (the reversed address, the
// link domains), what an owner is shown of a zone, the disposable list, and how the listings add to
// the filter's score: one alone, or one of each domain kind, never reaches the normal level, even
// beside everyone's Bayes at its most certain and a link rule.
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/shared/infra/config.ts';
import {
  DISPOSABLE_POINTS,
  isDisposable,
  LISTED_POINTS,
  linkDomains,
  MAX_LINK_DOMAINS,
  REPUTATION_SYMBOLS,
  reversedAddress,
  shownZone,
  TOGETHER_POINTS,
} from '../../../src/shared/spam/reputation.ts';
import { decideSpam, withReputation } from '../../../src/shared/spam/verdict.ts';

const NORMAL = 6;
const listing = (symbol: string) => ({ symbol, score: LISTED_POINTS });

describe('what is looked up', () => {
  it("is the visitor's address reversed, IPv6 by nibbles, and nothing for an address no list holds", () => {
    expect(reversedAddress('203.0.113.7')).toBe('7.113.0.203');
    expect(reversedAddress('::ffff:203.0.113.7')).toBe('7.113.0.203');
    expect(reversedAddress('2001:db8::1')).toBe(`1.${'0.'.repeat(23)}8.b.d.0.1.0.0.2`);
    for (const address of ['127.0.0.1', '10.1.2.3', '192.168.0.9', '100.64.0.1', 'fe80::1', '::1', 'not an address'])
      expect(reversedAddress(address)).toBeUndefined();
  });

  it('is the registrable domain of each link, once, at most ten', () => {
    expect(
      linkDomains(['See https://shop.example.co.uk/a?b and www.news.example.org, and http://user@login.bank.example:8080/x.', 'https://203.0.113.7/x']),
    ).toEqual(['example.co.uk', 'example.org', 'bank.example']);
    const farm = Array.from({ length: 30 }, (_, n) => `https://site${n}.example/`).join(' ');
    expect(linkDomains([farm])).toHaveLength(MAX_LINK_DOMAINS);
    expect(linkDomains(['no links here, just example.org'])).toEqual([]);
  });
});

describe('what an owner sees of a zone', () => {
  it('leaves out a Spamhaus DQS key', () => {
    expect(shownZone('zen.spamhaus.org')).toBe('zen.spamhaus.org');
    expect(shownZone('aaaabbbbccccddddeeeeffffgg.zen.dq.spamhaus.net')).toBe('zen.dq.spamhaus.net');
  });
});

describe('disposable addresses', () => {
  it('are the providers of the list and their subdomains, not the big free providers', () => {
    expect(isDisposable('mailinator.com')).toBe(true);
    expect(isDisposable('inbox.mailinator.com')).toBe(true);
    for (const domain of ['gmail.com', 'outlook.com', 'example.org']) expect(isDisposable(domain)).toBe(false);
  });
});

describe('the listings in the verdict', () => {
  const mostCertainEveryone = {
    score: 4.5 + 0.8,
    reasons: [
      { symbol: 'BAYES_SPAM', score: 4.5 },
      { symbol: 'FORM_LINK_FARM', score: 0.8 },
    ],
  };

  it('hold nothing at normal without an address listed beside a domain, with everything else at its most', () => {
    const apart = [listing(REPUTATION_SYMBOLS.link), listing(REPUTATION_SYMBOLS.email), { symbol: REPUTATION_SYMBOLS.disposable, score: DISPOSABLE_POINTS }];
    expect(decideSpam(withReputation(mostCertainEveryone, apart), undefined, NORMAL).verdict).toBe('ham');
    const addressOnly = [listing(REPUTATION_SYMBOLS.ip), { symbol: REPUTATION_SYMBOLS.disposable, score: DISPOSABLE_POINTS }];
    expect(decideSpam(withReputation(mostCertainEveryone, addressOnly), undefined, NORMAL).verdict).toBe('ham');
  });

  it('hold a message whose address and a domain are both listed, its reason first', () => {
    const together = [listing(REPUTATION_SYMBOLS.ip), listing(REPUTATION_SYMBOLS.link), { symbol: REPUTATION_SYMBOLS.together, score: TOGETHER_POINTS }];
    const scan = withReputation({ score: 0.3, reasons: [{ symbol: 'FORM_MANY_LINKS', score: 0.3 }] }, together);
    expect(scan?.score).toBe(6.7);
    expect(scan?.reasons.map((reason) => reason.symbol)).toEqual([
      REPUTATION_SYMBOLS.together,
      'FORM_MANY_LINKS',
      REPUTATION_SYMBOLS.ip,
      REPUTATION_SYMBOLS.link,
    ]);
    expect(decideSpam(scan, undefined, NORMAL).verdict).toBe('spam');
    // Without the filter's answer too: they agree.
    expect(decideSpam(withReputation(undefined, together), undefined, NORMAL).verdict).toBe('spam');
    // The owner's own "not spam" marks outweigh them.
    expect(decideSpam(withReputation({ score: -6, reasons: [] }, together), undefined, NORMAL).verdict).toBe('ham');
  });

  it('leave an email unchecked, not judged, when the filter did not answer and they do not agree', () => {
    expect(decideSpam(withReputation(undefined, [listing(REPUTATION_SYMBOLS.ip)]), undefined, NORMAL).verdict).toBe('unchecked');
  });
});

describe('the settings', () => {
  const VALID = {
    DATABASE_URL: 'postgres://u:p@127.0.0.1:5432/db',
    REDIS_URL: 'redis://127.0.0.1:6379',
    SMTP_URL: 'smtp://127.0.0.1:1025',
    SECRET: 'a-server-secret-of-at-least-32-characters',
  };

  it('name no zones and no resolver by default, and look for disposable addresses', () => {
    const config = loadConfig(VALID);
    expect(config).toMatchObject({ SPAM_DNSBL_ZONES: [], SPAM_URIBL_ZONES: [], SPAM_DNS_TIMEOUT_MS: 300, SPAM_DISPOSABLE_EMAIL: true });
    expect(config.SPAM_DNS_SERVERS).toBeUndefined();
  });

  it('read zones and resolvers as lists, and refuse what is neither', () => {
    const config = loadConfig({
      ...VALID,
      SPAM_DNSBL_ZONES: ' zen.spamhaus.org. ',
      SPAM_URIBL_ZONES: 'dbl.spamhaus.org, multi.surbl.org',
      SPAM_DNS_SERVERS: '10.0.0.2, 10.0.0.3:5353, [::1]:53',
    });
    expect(config.SPAM_DNSBL_ZONES).toEqual(['zen.spamhaus.org']);
    expect(config.SPAM_URIBL_ZONES).toEqual(['dbl.spamhaus.org', 'multi.surbl.org']);
    expect(config.SPAM_DNS_SERVERS).toEqual(['10.0.0.2', '10.0.0.3:5353', '[::1]:53']);
    expect(() => loadConfig({ ...VALID, SPAM_DNSBL_ZONES: 'zen.spamhaus.org/x' })).toThrow(/SPAM_DNSBL_ZONES/);
    expect(() => loadConfig({ ...VALID, SPAM_DNS_SERVERS: 'resolver.example' })).toThrow(/SPAM_DNS_SERVERS/);
  });
});
