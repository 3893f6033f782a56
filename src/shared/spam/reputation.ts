// What the spam check knows of a submission before any owner has marked anything: whether the
// visitor's address, the domains of the message's links or of the visitor's email are on the DNS
// blocklists the operator named (SPAM_DNSBL_ZONES, SPAM_URIBL_ZONES), and whether the email is at a
// disposable-address provider. Asked by the worker beside rspamd's check (src/workers/spam/spam-check.ts);
// its reasons add to rspamd's score (./verdict.ts).
// Ham first: shared and mobile addresses get listed, and so do domains a customer may link to. One
// listing, or one kind of listing however many lists agree, is a signal worth LISTED_POINTS; only an
// address listed together with a domain of the message (FORM_LISTED_TOGETHER) holds at `normal`.
// A lookup that does not answer within SPAM_DNS_TIMEOUT_MS counts as unlisted: the check goes on
// without it, and cfs_spam_reputation_lookups_total{result="timeout"} counts it.
import { Resolver } from 'node:dns/promises';
import { createRequire } from 'node:module';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { getDomain } from 'tldts';
import type { SpamReason } from '../words/spam-kinds.ts';
import { reputationLookups } from '../infra/metrics.ts';

/** A listing's points: with everyone's Bayes at its most certain (4.5) and a link rule (0.8), three of them stay under 6. */
export const LISTED_POINTS = 0.2;
/** An address listed together with a domain of the message: the `normal` level's 6 with the two listings beside. */
export const TOGETHER_POINTS = 6;
export const DISPOSABLE_POINTS = 0.2;
/** Link domains looked up per message, at most: a link farm's hundred links cost no more lookups than ten. */
export const MAX_LINK_DOMAINS = 10;

export const REPUTATION_SYMBOLS = {
  ip: 'FORM_IP_LISTED',
  link: 'FORM_LINK_LISTED',
  email: 'FORM_EMAIL_LISTED',
  together: 'FORM_LISTED_TOGETHER',
  disposable: 'FORM_DISPOSABLE_EMAIL',
} as const;

export type ReputationSettings = {
  /** Zones the visitor's address is looked up in (`zen.spamhaus.org`); empty: none. */
  ipZones: string[];
  /** Zones the domains of the links and of the visitor's email are looked up in (`dbl.spamhaus.org`); empty: none. */
  domainZones: string[];
  /** Resolvers (`127.0.0.1`, `127.0.0.1:5353`, `[::1]:53`); unset: the system's (/etc/resolv.conf). */
  servers: string[] | undefined;
  /** How long all the lookups of one check may take together. */
  timeoutMs: number;
  disposable: boolean;
};

/** What is looked up of a submission. */
export type ReputationSubject = { ip: string | null; email: string; texts: string[] };

export type ReputationCheck = (subject: ReputationSubject) => Promise<SpamReason[]>;

type Kind = 'ip' | 'link' | 'email';
type Outcome = 'listed' | 'unlisted' | 'refused' | 'timeout' | 'error';

/** The check the settings ask for; undefined when they ask for none. */
export function createReputationCheck(settings: ReputationSettings): ReputationCheck | undefined {
  if (!settings.ipZones.length && !settings.domainZones.length && !settings.disposable) return undefined;
  // Read now rather than on the first check, which would wait the 0.2 s it takes.
  if (settings.disposable) disposableDomains();
  return async (subject) => {
    const reasons: SpamReason[] = [];
    const domain = emailDomain(subject.email);
    if (settings.disposable && domain && isDisposable(domain)) {
      reasons.push({
        symbol: REPUTATION_SYMBOLS.disposable,
        score: DISPOSABLE_POINTS,
        description: `the visitor's email is at a disposable-address provider (${domain})`,
      });
    }
    const queries = lookups(subject, domain, settings);
    if (!queries.length) return reasons;
    const listed = await resolveAll(queries, settings);
    const byKind = new Map<Kind, Query[]>();
    for (const query of listed) byKind.set(query.kind, [...(byKind.get(query.kind) ?? []), query]);
    for (const [kind, found] of byKind) reasons.push(listingReason(kind, found));
    if (byKind.has('ip') && (byKind.has('link') || byKind.has('email'))) {
      reasons.push({
        symbol: REPUTATION_SYMBOLS.together,
        score: TOGETHER_POINTS,
        description: "the visitor's address and a domain of the message are both on blocklists",
      });
    }
    return reasons;
  };
}

type Query = { kind: Kind; name: string; zone: string; domain?: string };

function lookups(subject: ReputationSubject, domain: string | undefined, settings: ReputationSettings): Query[] {
  const queries: Query[] = [];
  const reversed = subject.ip ? reversedAddress(subject.ip) : undefined;
  if (reversed) for (const zone of settings.ipZones) queries.push({ kind: 'ip', name: `${reversed}.${zone}`, zone });
  if (settings.domainZones.length) {
    const registrable = domain ? getDomain(domain, { allowPrivateDomains: false }) : null;
    for (const zone of settings.domainZones) {
      if (registrable) queries.push({ kind: 'email', name: `${registrable}.${zone}`, zone, domain: registrable });
      for (const link of linkDomains(subject.texts)) queries.push({ kind: 'link', name: `${link}.${zone}`, zone, domain: link });
    }
  }
  return queries;
}

/** The lookups that found a listing; every lookup ends by the deadline (those still out count as timed out). */
async function resolveAll(queries: Query[], settings: ReputationSettings): Promise<Query[]> {
  // One resolver per check, so that the deadline cancels this check's lookups only.
  const resolver = new Resolver({ timeout: settings.timeoutMs, tries: 1 });
  if (settings.servers) resolver.setServers(settings.servers);
  const cache = new Map<string, Promise<string[] | Outcome>>();
  const answer = (name: string) => {
    let pending = cache.get(name);
    if (!pending) cache.set(name, (pending = resolver.resolve4(name).catch((error: unknown) => errorOutcome(error as NodeJS.ErrnoException))));
    return pending;
  };
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), settings.timeoutMs)));
  try {
    const outcomes = await Promise.all(
      queries.map(async (query) => {
        const result = await Promise.race([answer(query.name), deadline]);
        const outcome = typeof result === 'string' ? result : listingOf(query.kind, result);
        reputationLookups.inc({ kind: query.kind === 'ip' ? 'ip' : 'domain', result: outcome });
        return outcome === 'listed' ? query : undefined;
      }),
    );
    return outcomes.filter((query) => query !== undefined);
  } finally {
    clearTimeout(timer);
    resolver.cancel();
  }
}

function errorOutcome(error: NodeJS.ErrnoException): Outcome {
  if (error.code === 'ENOTFOUND' || error.code === 'ENODATA') return 'unlisted';
  if (error.code === 'ETIMEOUT' || error.code === 'ECANCELLED') return 'timeout';
  return 'error';
}

/**
 * What a list's answer means. Refused: Spamhaus's 127.255.255.x (a public resolver, no DQS key, over
 * the free volume) and SURBL's and URIBL's 127.0.0.1. Listed: for an address, 127.0.0.2–127.0.0.9
 * (Spamhaus ZEN's spam sources and exploited hosts; not its 127.0.0.10–11, the policy list of
 * addresses ISPs hand to homes and phones, nor SORBS's dynamic 127.0.0.10); for a domain, Spamhaus
 * DBL's 127.0.1.2–127.0.1.99 (spam, phishing, malware, botnets; not its abused legitimate domains from
 * 127.0.1.102) and 127.0.0.2–127.0.0.255 (SURBL's and URIBL's bits) but URIBL's grey 127.0.0.4 alone
 * (bulk senders, newsletters).
 */
function listingOf(kind: Kind, addresses: string[]): Outcome {
  let outcome: Outcome = 'unlisted';
  for (const address of addresses) {
    const [a, b, c, d] = address.split('.').map(Number) as [number, number, number, number];
    if (a !== 127) continue;
    if ((b === 255 && c === 255) || (b === 0 && c === 0 && d === 1) || (kind !== 'ip' && b === 0 && c === 1 && d === 255)) {
      outcome = 'refused';
      continue;
    }
    const listed = kind === 'ip' ? b === 0 && c === 0 && d >= 2 && d <= 9 : b === 0 && ((c === 1 && d >= 2 && d <= 99) || (c === 0 && d >= 2 && d !== 4));
    if (listed) return 'listed';
  }
  return outcome;
}

function listingReason(kind: Kind, found: Query[]): SpamReason {
  const zones = [...new Set(found.map((query) => shownZone(query.zone)))].join(', ');
  const domains = [...new Set(found.map((query) => query.domain))].join(', ');
  const description =
    kind === 'ip'
      ? `the visitor's address is listed by ${zones}`
      : kind === 'link'
        ? `a link's domain (${domains}) is listed by ${zones}`
        : `the visitor's email domain (${domains}) is listed by ${zones}`;
  return { symbol: REPUTATION_SYMBOLS[kind], score: LISTED_POINTS, description };
}

/** A zone as owners may see it: without a Spamhaus DQS key (a label of 20 characters or more), which is the operator's secret. */
export function shownZone(zone: string): string {
  return zone
    .split('.')
    .filter((label) => label.length < 20)
    .join('.');
}

/** The name an address is looked up under (`7.113.0.203`, IPv6 by nibbles); undefined for one no list holds (private, loopback, …). */
export function reversedAddress(address: string): string | undefined {
  if (!ipaddr.isValid(address)) return undefined;
  const parsed = ipaddr.process(address);
  if (['private', 'loopback', 'linkLocal', 'unspecified', 'multicast', 'broadcast', 'carrierGradeNat', 'uniqueLocal'].includes(parsed.range()))
    return undefined;
  if (parsed.kind() === 'ipv4') return parsed.toString().split('.').reverse().join('.');
  const nibbles = (parsed as ipaddr.IPv6).parts.map((part) => part.toString(16).padStart(4, '0')).join('');
  return nibbles.split('').reverse().join('.');
}

/** The registrable domains of the links in the texts (`https://shop.example.co.uk/x`, `www.example.org`), at most MAX_LINK_DOMAINS. */
export function linkDomains(texts: string[]): string[] {
  const found = new Set<string>();
  for (const text of texts) {
    for (const match of text.matchAll(/\b(?:https?:\/\/(?:[^\s/?#@]*@)?|(?=www\.))([^\s/?#:<>"'`()[\]{},;!]+)/gi)) {
      const host = match[1]!.toLowerCase().replace(/\.+$/, '');
      if (isIP(host)) continue;
      const domain = getDomain(host, { allowPrivateDomains: false });
      if (domain) found.add(domain);
      if (found.size >= MAX_LINK_DOMAINS) return [...found];
    }
  }
  return [...found];
}

function emailDomain(email: string): string | undefined {
  const at = email.lastIndexOf('@');
  return at > 0 ? email.slice(at + 1).toLowerCase() : undefined;
}

let disposableList: { domains: Set<string>; wildcards: string[] } | undefined;

/** The disposable-email-domains package's lists, read once: 120,000 names. */
function disposableDomains(): { domains: Set<string>; wildcards: string[] } {
  if (!disposableList) {
    const require = createRequire(import.meta.url);
    disposableList = {
      domains: new Set(require('disposable-email-domains') as string[]),
      wildcards: require('disposable-email-domains/wildcard.json') as string[],
    };
  }
  return disposableList;
}

/** Whether a domain, or the registrable domain it is under, is in the disposable-email-domains package. */
export function isDisposable(domain: string): boolean {
  const list = disposableDomains();
  const registrable = getDomain(domain, { allowPrivateDomains: false }) ?? domain;
  return list.domains.has(domain) || list.domains.has(registrable) || list.wildcards.some((wildcard) => domain === wildcard || domain.endsWith(`.${wildcard}`));
}
