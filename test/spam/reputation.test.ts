// Blocklists and disposable addresses in the spam check, before any owner has marked anything:
// a real rspamd beside a DNS server on loopback serving test zones (ip.test for the visitor's
// address, uri.test for the domains of links and of the visitor's email). Each listing shows as a
// reason and holds nothing by itself; an address listed together with a domain of the message holds
// it at `normal`; a resolver that never answers changes nothing but the wait.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RspamdService } from '../../src/local/rspamd.ts';
import { createReputationCheck } from '../../src/shared/spam/reputation.ts';
import { submitJson } from '../support/client.ts';
import { startDnsServer, type DnsServer } from '../support/dns-server.ts';
import { startHarness, type Harness, type TestKey } from '../support/harness.ts';
import { settledRecord, spamFilterEnv, startSpamFilter } from '../support/spam-filter.ts';

const TOKEN = 'reputation-admin-token-0123456789';

const LISTED_IP = '203.0.113.7';
const HOME_IP = '203.0.113.8';
const CLEAN_IP = '203.0.113.9';
const SPAM_DOMAIN = 'cheap-pills.example';
const SPAM_SENDER_DOMAIN = 'bulk-sender.example';
const ZONES = {
  // An exploited host (Spamhaus XBL's answer).
  '7.113.0.203.ip.test': '127.0.0.4',
  // A home address on Spamhaus's policy list: every visitor from a home or a phone is on it.
  '8.113.0.203.ip.test': '127.0.0.10',
  // A spam domain (Spamhaus DBL's answer).
  [`${SPAM_DOMAIN}.uri.test`]: '127.0.1.2',
  [`${SPAM_SENDER_DOMAIN}.uri.test`]: '127.0.1.2',
};

const ORDINARY = 'Hello, could you send me a quote for a new kitchen? We would like the work done in March. Thank you, Ana';

let filter: RspamdService;

beforeAll(async () => {
  filter = await startSpamFilter();
}, 90_000);
afterAll(async () => {
  await filter?.stop();
});

const symbols = (record: { spam: { reasons: Array<{ symbol: string }> } }) => record.spam.reasons.map((reason) => reason.symbol);
const reputationSymbols = (record: { spam: { reasons: Array<{ symbol: string }> } }) =>
  symbols(record).filter((symbol) => /^FORM_(IP|LINK|EMAIL)_LISTED$|^FORM_LISTED_TOGETHER$|^FORM_DISPOSABLE_EMAIL$/.test(symbol));

async function submitFromAddress(h: Harness, key: TestKey, ip: string, fields: { email?: string; message?: string } = {}): Promise<string> {
  const response = await submitJson(h, { access_key: key.key, email: 'visitor@example.org', message: ORDINARY, ...fields }, { 'x-forwarded-for': ip });
  expect(response.status).toBe(200);
  return response.json.submission_id as string;
}

describe('blocklists named by the operator', () => {
  let dns: DnsServer;
  let h: Harness;
  let key: TestKey;

  beforeAll(async () => {
    dns = await startDnsServer({ records: ZONES });
    h = await startHarness({
      env: {
        ...spamFilterEnv(filter),
        ADMIN_TOKEN: TOKEN,
        TRUST_PROXY: '127.0.0.0/8',
        SPAM_DNSBL_ZONES: 'ip.test',
        SPAM_URIBL_ZONES: 'uri.test',
        SPAM_DNS_SERVERS: `127.0.0.1:${dns.port}`,
        // Loopback answers in a millisecond; the bound only has to outlast a busy machine.
        SPAM_DNS_TIMEOUT_MS: '5000',
      },
    });
    key = await h.createKey();
  }, 90_000);
  afterAll(async () => {
    await h?.stop();
    await dns?.stop();
  });

  const settled = (id: string) => settledRecord(h, TOKEN, id);

  it('adds nothing for an address, a link and an email no list holds, and looks each up', async () => {
    const record = await settled(
      await submitFromAddress(h, key, CLEAN_IP, { email: 'ana@kitchens.example', message: `${ORDINARY} Our plans: https://www.plans.example/ana` }),
    );
    expect(record.email_status).toBe('sent');
    expect(record.spam.verdict).toBe('ham');
    expect(reputationSymbols(record)).toEqual([]);
    expect(dns.asked).toEqual(expect.arrayContaining(['9.113.0.203.ip.test', 'plans.example.uri.test', 'kitchens.example.uri.test']));
  });

  it("adds nothing for a home address on the policy list, which is every home's", async () => {
    const record = await settled(await submitFromAddress(h, key, HOME_IP));
    expect(dns.asked).toContain('8.113.0.203.ip.test');
    expect(record.email_status).toBe('sent');
    expect(reputationSymbols(record)).toEqual([]);
  });

  it('shows a listed address as a reason, and sends the message', async () => {
    const record = await settled(await submitFromAddress(h, key, LISTED_IP));
    expect(record.email_status).toBe('sent');
    expect(record.spam.verdict).toBe('ham');
    expect(reputationSymbols(record)).toEqual(['FORM_IP_LISTED']);
    expect(record.spam.reasons.find((reason: { symbol: string }) => reason.symbol === 'FORM_IP_LISTED').description).toMatch(/listed by ip\.test/);
  });

  it("shows a listed link's domain as a reason, and sends the message", async () => {
    const record = await settled(await submitFromAddress(h, key, CLEAN_IP, { message: `${ORDINARY} Also see https://shop.${SPAM_DOMAIN}/offer` }));
    expect(record.email_status).toBe('sent');
    expect(record.spam.verdict).toBe('ham');
    expect(reputationSymbols(record)).toEqual(['FORM_LINK_LISTED']);
    expect(record.spam.reasons.find((reason: { symbol: string }) => reason.symbol === 'FORM_LINK_LISTED').description).toContain(SPAM_DOMAIN);
  });

  it('shows a listed email domain as a reason, and sends the message', async () => {
    const record = await settled(await submitFromAddress(h, key, CLEAN_IP, { email: `offers@${SPAM_SENDER_DOMAIN}` }));
    expect(record.email_status).toBe('sent');
    expect(reputationSymbols(record)).toEqual(['FORM_EMAIL_LISTED']);
  });

  it('shows a disposable address as a reason, and sends the message', async () => {
    const record = await settled(await submitFromAddress(h, key, CLEAN_IP, { email: 'ana@mailinator.com' }));
    expect(record.email_status).toBe('sent');
    expect(reputationSymbols(record)).toEqual(['FORM_DISPOSABLE_EMAIL']);
  });

  it('holds a message whose address and link are both listed', async () => {
    const record = await settled(await submitFromAddress(h, key, LISTED_IP, { message: `${ORDINARY} Also see https://${SPAM_DOMAIN}/offer` }));
    expect(record.email_status).toBe('spam');
    expect(record.spam.verdict).toBe('spam');
    expect(symbols(record)[0]).toBe('FORM_LISTED_TOGETHER');
    expect(reputationSymbols(record).sort()).toEqual(['FORM_IP_LISTED', 'FORM_LINK_LISTED', 'FORM_LISTED_TOGETHER']);
    expect(record.spam.score).toBeGreaterThanOrEqual(h.config.SPAM_SCORE_NORMAL);
  });

  it("holds a message whose address and the visitor's email domain are both listed", async () => {
    const record = await settled(await submitFromAddress(h, key, LISTED_IP, { email: `offers@${SPAM_SENDER_DOMAIN}` }));
    expect(record.email_status).toBe('spam');
    expect(reputationSymbols(record).sort()).toEqual(['FORM_EMAIL_LISTED', 'FORM_IP_LISTED', 'FORM_LISTED_TOGETHER']);
  });

  it('does not hold a listed link with a listed email domain from an address no list holds: both say the same', async () => {
    const record = await settled(
      await submitFromAddress(h, key, CLEAN_IP, { email: `ana@${SPAM_SENDER_DOMAIN}`, message: `${ORDINARY} https://${SPAM_DOMAIN}/offer` }),
    );
    expect(record.email_status).toBe('sent');
    expect(reputationSymbols(record).sort()).toEqual(['FORM_EMAIL_LISTED', 'FORM_LINK_LISTED']);
  });
});

describe('a resolver that never answers', () => {
  let dns: DnsServer;
  let h: Harness;

  beforeAll(async () => {
    dns = await startDnsServer({ records: ZONES, silent: true });
    h = await startHarness({
      env: {
        ...spamFilterEnv(filter),
        ADMIN_TOKEN: TOKEN,
        TRUST_PROXY: '127.0.0.0/8',
        METRICS_PORT: '0',
        SPAM_DNSBL_ZONES: 'ip.test',
        SPAM_URIBL_ZONES: 'uri.test',
        SPAM_DNS_SERVERS: `127.0.0.1:${dns.port}`,
        SPAM_DNS_TIMEOUT_MS: '300',
      },
    });
  }, 90_000);
  afterAll(async () => {
    await h?.stop();
    await dns?.stop();
  });

  it('sends what its listings would have held, checked by rspamd alone, and counts the lookups that timed out', async () => {
    const key = await h.createKey();
    const record = await settledRecord(h, TOKEN, await submitFromAddress(h, key, LISTED_IP, { message: `${ORDINARY} Also see https://${SPAM_DOMAIN}/offer` }));
    expect(dns.asked).toEqual(expect.arrayContaining(['7.113.0.203.ip.test', `${SPAM_DOMAIN}.uri.test`]));
    expect(record.email_status).toBe('sent');
    // rspamd's verdict: the lookups add nothing, and the check is not `unchecked`.
    expect(record.spam.verdict).toBe('ham');
    expect(reputationSymbols(record)).toEqual([]);
    const metrics = await fetch(`http://127.0.0.1:${h.workers[0]!.metricsPort}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    const text = await metrics.text();
    expect(text).toMatch(/cfs_spam_reputation_lookups_total\{kind="ip",result="timeout"\} [1-9]/);
    expect(text).toMatch(/cfs_spam_reputation_lookups_total\{kind="domain",result="timeout"\} [1-9]/);
  });

  it('ends its lookups at SPAM_DNS_TIMEOUT_MS, whatever the number of zones and links', async () => {
    const check = createReputationCheck({
      ipZones: ['ip.test', 'ip2.test'],
      domainZones: ['uri.test', 'uri2.test'],
      servers: [`127.0.0.1:${dns.port}`],
      timeoutMs: 300,
      disposable: false,
    })!;
    const links = Array.from({ length: 10 }, (_, n) => `https://site${n}.example/`).join(' ');
    const started = performance.now();
    expect(await check({ ip: LISTED_IP, email: `offers@${SPAM_SENDER_DOMAIN}`, texts: [links] })).toEqual([]);
    // The deadline is one timer of 300 ms for all 24 lookups; 5 s more allows a busy machine's late timers.
    expect(performance.now() - started).toBeLessThan(300 + 5_000);
    expect(dns.asked).toContain(`site9.example.uri2.test`);
  });
});
