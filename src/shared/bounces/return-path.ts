// The return path of each email (VERP): an envelope sender of its own at BOUNCE_DOMAIN, so that a
// bounce or a complaint sent back to it names the row it is about. It carries the kind and the
// row's id, and a MAC under SECRET: anyone can send mail to the bounce receiver, but only this
// service can make an address that it accepts, so a forged bounce cannot change another row.
//
//   b-s-<row id, 32 hex>-<MAC, 16 hex>@BOUNCE_DOMAIN   (53 characters before the @; at most 64 are allowed)
//
// Lower case only: some relays lower-case the address on the way back.
import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';

/** The kinds of email that carry a return path of their own: their rows keep what comes back. */
export const RETURNED_KINDS = { s: 'submission', k: 'key-email', a: 'autoresponse', c: 'recipient-copy' } as const;
type KindCode = keyof typeof RETURNED_KINDS;
export type ReturnedKind = (typeof RETURNED_KINDS)[KindCode];

const CODE_OF: Record<ReturnedKind, KindCode> = { submission: 's', 'key-email': 'k', autoresponse: 'a', 'recipient-copy': 'c' };
const ADDRESS = /^b-([skac])-([0-9a-f]{32})-([0-9a-f]{16})@(.+)$/;
const MAC_BYTES = 8;

export type ReturnTarget = { kind: ReturnedKind; id: string };

export type ReturnPaths = {
  domain: string;
  /** The envelope sender for this row's email. */
  address: (kind: ReturnedKind, id: string) => string;
  /** The row an address of ours names; undefined for anything else (another domain, a bad MAC). */
  read: (address: string) => ReturnTarget | undefined;
};

export function createReturnPaths(secret: string, domain: string): ReturnPaths {
  const macKey = Buffer.from(hkdfSync('sha256', secret, 'contact-form-service', 'return path', 32));
  const mac = (code: KindCode, hex: string) => createHmac('sha256', macKey).update(`${code}:${hex}`).digest().subarray(0, MAC_BYTES);
  const ourDomain = domain.toLowerCase();
  return {
    domain: ourDomain,
    address(kind, id) {
      const code = CODE_OF[kind];
      const hex = id.replace(/-/g, '').toLowerCase();
      return `b-${code}-${hex}-${mac(code, hex).toString('hex')}@${ourDomain}`;
    },
    read(address) {
      const match = ADDRESS.exec(address.trim().toLowerCase());
      if (!match) return undefined;
      const [, code, hex, given, atDomain] = match as unknown as [string, KindCode, string, string, string];
      if (atDomain !== ourDomain) return undefined;
      if (!timingSafeEqual(Buffer.from(given, 'hex'), mac(code, hex))) return undefined;
      const id = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
      return { kind: RETURNED_KINDS[code], id };
    },
  };
}
