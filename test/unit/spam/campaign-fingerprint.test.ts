// The fingerprint of a message for spam campaigns: one spam text sent to many forms, with a name,
// a phone number or a link changed, must be near-identical to itself, and unrelated messages must
// not. The messages are those of the SMS Spam Collection (bench/data/, also what
// `npm run bench:spam-campaigns` measures), whose spam holds real campaigns.
import { describe, expect, it } from 'vitest';
import { readSmsCollection } from '../../../bench/support/spam-samples.ts';
import { agreement, campaignFingerprint, campaignWords, HASHES, MATCHING, MIN_WORDS, type Fingerprint } from '../../../src/shared/spam/campaign-fingerprint.ts';
import { isCampaign, voteDomainOf } from '../../../src/shared/spam/spam-campaigns.ts';

const nearIdentical = (a: string, b: string) => agreement(campaignFingerprint(a)!, campaignFingerprint(b)!) >= MATCHING;

describe('the words of a message', () => {
  it('are lower case, without punctuation, every number a 0 and every link its host', () => {
    expect(campaignWords('Visit https://www.Rank-Boost.example/audit?ref=a1 or call +44 (20) 7946-0958, ２day!')).toEqual([
      'visit',
      'rankboostexample',
      'or',
      'call',
      '0',
      '0day',
    ]);
  });
});

describe('a campaign message', () => {
  const pitch = (name: string, phone: string, link: string) =>
    `Hello, my name is ${name} and I am reaching out because we help small businesses like yours reach the first page of search results within weeks. Call me on ${phone} or book a free audit at ${link} today.`;

  it('with another phone number or price written another way has the same fingerprint', () => {
    expect(campaignFingerprint(pitch('Anna', '+1 555 014 2231', 'https://rank.example/a'))).toEqual(
      campaignFingerprint(pitch('Anna', '(020) 7946 0958', 'http://www.rank.example/free?utm_source=form')),
    );
  });

  it('with another name and another link is near-identical', () => {
    expect(
      nearIdentical(pitch('Anna Berg', '555-0188', 'https://rank-boost.example/audit'), pitch('Marco', '555-0188', 'https://seo-wins.example/start')),
    ).toBe(true);
  });

  it('reworded around its phone number, as in the collection, is near-identical', () => {
    expect(
      nearIdentical(
        'Please call our customer service representative on 0800 169 6031 between 10am-9pm as you have WON a guaranteed £1000 cash or £5000 prize!',
        'Please call our customer service representative on FREEPHONE 0808 145 4742 between 9am-11pm as you have WON a guaranteed £1000 cash or £5000 prize!',
      ),
    ).toBe(true);
  });
});

describe('the SMS Spam Collection', () => {
  const messages = readSmsCollection().flatMap((message) => {
    const fingerprint = campaignFingerprint(message.text);
    return fingerprint ? [{ ...message, fingerprint }] : [];
  });
  const spam = messages.filter((message) => message.spam);
  const ham = messages.filter((message) => !message.spam);
  // As the stored check does: only fingerprints that share a band are compared.
  const byBand = new Map<number, Fingerprint[]>();
  for (const { fingerprint } of spam) for (const band of fingerprint.bands) byBand.set(band, [...(byBand.get(band) ?? []), fingerprint]);
  const matchesSpam = (fingerprint: Fingerprint) =>
    fingerprint.bands.some((band) => (byBand.get(band) ?? []).some((other) => other !== fingerprint && agreement(fingerprint, other) >= MATCHING));

  it('has no ham message near-identical to one of its spam messages', () => {
    expect(ham.length).toBeGreaterThan(1_000);
    expect(ham.filter((message) => matchesSpam(message.fingerprint)).map((message) => message.text)).toEqual([]);
  });

  it('has its spam campaigns found: a good share of its spam is near-identical to other spam', () => {
    const inCampaigns = spam.filter((message) => matchesSpam(message.fingerprint)).length;
    expect(inCampaigns / spam.length).toBeGreaterThan(0.3);
  });
});

describe('a fingerprint', () => {
  const text = 'Please call our customer service representative on 0800 169 6031 between 10am-9pm as you have WON a guaranteed £1000 cash or £5000 prize!';

  it(`is not made of fewer than ${MIN_WORDS} words: short messages are alike for customers and spammers`, () => {
    expect(MIN_WORDS).toBe(20);
    // One customer's short request and another's rewording share most of their word pairs.
    expect(campaignFingerprint('Hi, I would like a quote for my kitchen')).toBeUndefined();
    const nineteen = 'Hi, I would like a quote for my kitchen, about twelve square metres, with new white cabinets and worktops.';
    expect(campaignWords(nineteen)).toHaveLength(19);
    expect(campaignFingerprint(nineteen)).toBeUndefined();
    expect(campaignFingerprint(`${nineteen} Thanks`)).toBeDefined();
  });

  it(`has ${HASHES} values and 16 bands, each band numbered in its top bits`, () => {
    const fingerprint = campaignFingerprint(text)!;
    expect(fingerprint.hashes).toHaveLength(HASHES);
    expect(fingerprint.bands.map((band) => band >>> 28)).toEqual(Array.from({ length: 16 }, (_, index) => index));
  });

  it('is the same as the ones stored by earlier versions: any change makes the stored votes count for nothing', () => {
    const fingerprint = campaignFingerprint(text)!;
    expect(fingerprint.hashes.slice(0, 6)).toEqual([237260380, 27989927, 34042146, 103630578, 138239895, 106416839]);
    expect(fingerprint.bands.slice(0, 4)).toEqual([1138675, 271571508, 666515373, 917853463]);
  });
});

describe('the votes on a message', () => {
  it('hold it as a campaign once the owners of 3 different mailboxes, at 3 different domains, marked it spam', () => {
    expect(isCampaign({ otherMailboxes: 3, spamDomains: 3, ownSpam: false, ownHam: false })).toBe(true);
    expect(isCampaign({ otherMailboxes: 2, spamDomains: 3, ownSpam: true, ownHam: false })).toBe(true);
    expect(isCampaign({ otherMailboxes: 2, spamDomains: 2, ownSpam: false, ownHam: false })).toBe(false);
  });

  it('do not hold it when the mailboxes that marked it are at fewer than 3 domains: a domain is one voice', () => {
    expect(isCampaign({ otherMailboxes: 50, spamDomains: 2, ownSpam: false, ownHam: false })).toBe(false);
    expect(isCampaign({ otherMailboxes: 2, spamDomains: 2, ownSpam: true, ownHam: false })).toBe(false);
  });

  it('never hold it for an owner who said such a message is not spam', () => {
    expect(isCampaign({ otherMailboxes: 50, spamDomains: 50, ownSpam: false, ownHam: true })).toBe(false);
  });
});

describe('the domain a mailbox votes from', () => {
  it('is its registrable domain: the mailboxes of one domain and its subdomains are one voice', () => {
    expect(voteDomainOf('a@shop.example')).toBe('shop.example');
    expect(voteDomainOf('b@sales.shop.example')).toBe('shop.example');
    expect(voteDomainOf('c@mail.shop.example.co.uk')).toBe('example.co.uk');
    expect(voteDomainOf('d@other.example.co.uk')).toBe('example.co.uk');
    expect(voteDomainOf('x@yandex.ru')).toBe('yandex.ru');
  });

  it("does not let the public suffix list's private part, where subdomains are free to have, make several", () => {
    expect(voteDomainOf('a@one.duckdns.org')).toBe('duckdns.org');
    expect(voteDomainOf('b@two.duckdns.org')).toBe('duckdns.org');
  });

  it("counts Microsoft's consumer domains as one", () => {
    expect(new Set(['sam@outlook.com', 'sam@hotmail.com', 'sam@live.com', 'sam@msn.com'].map(voteDomainOf))).toEqual(new Set(['outlook.com']));
  });

  it('is the domain as written when it has no registrable domain', () => {
    expect(voteDomainOf('root@localhost')).toBe('localhost');
    expect(voteDomainOf('a@[127.0.0.1]')).toBe('[127.0.0.1]');
  });
});
