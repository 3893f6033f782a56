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
import { releaseHeld } from '../submissions/data/delivery-status.ts';

/**
 * Providers that deliver every spelling of a name to one inbox: dots in the local part are
 * ignored, and each domain listed is an alias of the first.
 */
const DOTLESS_PROVIDERS: ReadonlyArray<readonly [canonical: string, ...aliases: string[]]> = [['gmail.com', 'googlemail.com']];

/**
 * The inbox an address delivers to: lower-cased, without the +tag of its local part and, at the
 * providers above, without dots and under the provider's first domain. Everything that counts,
 * confirms, suppresses for complaints or locks per inbox uses it; the address as typed is what is
 * shown and mailed to.
 */
export function mailboxOf(email: string): string {
  const address = email.trim().toLowerCase();
  const at = address.lastIndexOf('@');
  if (at < 0) return address;
  const plus = address.slice(0, at).indexOf('+');
  let local = plus < 0 ? address.slice(0, at) : address.slice(0, plus);
  let domain = address.slice(at + 1);
  const provider = DOTLESS_PROVIDERS.find((domains) => domains.includes(domain));
  if (provider) {
    local = local.replaceAll('.', '');
    domain = provider[0];
  }
  return `${local}@${domain}`;
}

/** Signs and checks confirmation links: an HMAC of the mailbox under a key derived from SECRET. */
export type ConsentSigner = {
  token: (mailbox: string) => string;
  verify: (mailbox: string, token: string) => boolean;
  /** The page where the owner of `email` confirms (GET shows a button; only its POST confirms). */
  link: (publicUrl: string, email: string) => string;
};

export function createConsentSigner(secret: string): ConsentSigner {
  const key = Buffer.from(hkdfSync('sha256', secret, 'contact-form-service', 'recipient consent', 32));
  const token = (mailbox: string) => createHmac('sha256', key).update(mailbox).digest('base64url');
  return {
    token,
    verify(mailbox, given) {
      const expected = Buffer.from(token(mailbox));
      const presented = Buffer.from(given);
      return presented.length === expected.length && timingSafeEqual(presented, expected);
    },
    link(publicUrl, email) {
      const mailbox = mailboxOf(email);
      return `${publicUrl}/confirm?${new URLSearchParams({ address: mailbox, token: token(mailbox) }).toString()}`;
    },
  };
}

/** Confirms the mailbox (lasting) and releases its held submissions; returns their ids to enqueue. */
export async function confirmMailbox(em: EntityManager, mailbox: string): Promise<string[]> {
  return inTransaction(em, async (tx) => {
    await recordConfirmed(tx, mailbox);
    return releaseHeld(tx, mailbox);
  });
}
