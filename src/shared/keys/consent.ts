// Recipient consent. Anyone can create a key for any address, so an address that has not confirmed
// it wants this service's mail receives at most a small number of submission emails per clock hour
// (UNCONFIRMED_EMAILS_PER_HOUR); past that, submissions are saved as `held` and delivered when the
// address confirms, through the link in its key emails or in one "confirm to receive more" email.
// Everything counts per mailbox (mailboxOf), so `Victim+1@` and `victim@` share one allowance and
// one confirmation.
import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { inTransaction } from '../infra/db/transactions.ts';
import { recordConfirmed } from './data/mailbox-consent.ts';
import { releaseHeld } from '../deliveries/deliveries.ts';

/**
 * Providers whose every spelling of a name reaches one inbox, as each documents it: each domain
 * listed is an alias of the first, and `local` gives the name's one spelling there. Only what is
 * provably the same inbox is folded: Microsoft's outlook.com, hotmail.com and live.com are separate
 * namespaces (one name can be two people's), and so are Fastmail's many domains (docs/spam.md).
 */
const PROVIDERS: ReadonlyArray<{ domains: readonly [canonical: string, ...aliases: string[]]; local?: (local: string) => string }> = [
  // Gmail ignores dots in the name.
  { domains: ['gmail.com', 'googlemail.com'], local: (local) => local.replaceAll('.', '') },
  // Yandex gives every account its name on each of these domains, and reads a dot in it as a hyphen.
  {
    domains: ['yandex.ru', 'ya.ru', 'yandex.com', 'yandex.by', 'yandex.kz', 'yandex.ua', 'narod.ru'],
    local: (local) => local.replaceAll('.', '-'),
  },
  // Proton: a name on one of its domains is reserved to its account on all; dots, hyphens and underscores are transparent.
  { domains: ['proton.me', 'protonmail.com', 'protonmail.ch', 'pm.me'], local: (local) => local.replace(/[._-]/g, '') },
  // Apple: a name at mac.com or me.com is the same account's at icloud.com.
  { domains: ['icloud.com', 'me.com', 'mac.com'] },
];

/** Fastmail's subdomain addressing: `anything@name.fastmail.com` reaches `name@fastmail.com`, as a +tag does. */
const SUBDOMAIN_ADDRESSING = ['fastmail.com', 'fastmail.fm'];

/**
 * The inbox an address delivers to: lower-cased, without the +tag of its local part and, at the
 * providers above, under the provider's first domain and the name's one spelling there. Everything
 * that counts, confirms, suppresses for complaints or locks per inbox uses it; the address as typed
 * is what is shown and mailed to.
 */
export function mailboxOf(email: string): string {
  const address = email.trim().toLowerCase();
  const at = address.lastIndexOf('@');
  if (at < 0) return address;
  const plus = address.slice(0, at).indexOf('+');
  let local = plus < 0 ? address.slice(0, at) : address.slice(0, plus);
  let domain = address.slice(at + 1);
  const addressed = SUBDOMAIN_ADDRESSING.find((base) => domain.endsWith(`.${base}`) && !domain.slice(0, -base.length - 1).includes('.'));
  if (addressed) {
    local = domain.slice(0, -addressed.length - 1);
    domain = addressed;
  }
  const provider = PROVIDERS.find(({ domains }) => domains.includes(domain));
  if (provider) {
    local = provider.local?.(local) ?? local;
    domain = provider.domains[0];
  }
  return `${local}@${domain}`;
}

/** Signs and checks confirmation links: an HMAC of the mailbox under a key derived from SECRET. */
export type ConsentSigner = {
  token: (mailbox: string) => string;
  verify: (mailbox: string, token: string) => boolean;
  /** The page where the owner of `email` confirms (GET shows a button; only its POST confirms). */
  link: (publicUrl: string, email: string) => string;
  /**
   * An address added to a key (src/shared/recipients) confirms on the same page, through a link that
   * names that one addition: the recipient row's id, signed under a key of its own.
   */
  verifyRecipient: (recipientId: string, token: string) => boolean;
  recipientLink: (publicUrl: string, recipientId: string) => string;
};

export function createConsentSigner(secret: string): ConsentSigner {
  const key = Buffer.from(hkdfSync('sha256', secret, 'contact-form-service', 'recipient consent', 32));
  const token = (mailbox: string) => createHmac('sha256', key).update(mailbox).digest('base64url');
  const recipientKey = Buffer.from(hkdfSync('sha256', secret, 'contact-form-service', 'added recipient consent', 32));
  const recipientToken = (id: string) => createHmac('sha256', recipientKey).update(id.toLowerCase()).digest('base64url');
  const same = (given: string, expected: string) => {
    const [a, b] = [Buffer.from(given), Buffer.from(expected)];
    return a.length === b.length && timingSafeEqual(a, b);
  };
  return {
    token,
    verify: (mailbox, given) => same(given, token(mailbox)),
    link(publicUrl, email) {
      const mailbox = mailboxOf(email);
      return `${publicUrl}/confirm?${new URLSearchParams({ address: mailbox, token: token(mailbox) }).toString()}`;
    },
    verifyRecipient: (id, given) => same(given, recipientToken(id)),
    recipientLink: (publicUrl, id) => `${publicUrl}/confirm?${new URLSearchParams({ recipient: id, token: recipientToken(id) }).toString()}`,
  };
}

/** Confirms the mailbox (lasting) and releases its held submissions; returns their ids to enqueue. */
export async function confirmMailbox(em: EntityManager, mailbox: string): Promise<string[]> {
  return inTransaction(em, async (tx) => {
    await recordConfirmed(tx, mailbox);
    return releaseHeld(tx, mailbox);
  });
}
