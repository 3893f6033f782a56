// The inbox an address delivers to (mailboxOf): what every per-mailbox count, confirmation,
// complaint and lock uses, so that `Victim+1@` and `victim@` share one allowance. And the signed
// link with which that mailbox confirms it wants the service's mail.
import { describe, expect, it } from 'vitest';
import { createConsentSigner, mailboxOf } from '../../../src/shared/keys/consent.ts';

describe('the mailbox of an address', () => {
  it('is the address in lower case, without surrounding spaces', () => {
    expect(mailboxOf('  Owner@Example.COM ')).toBe('owner@example.com');
  });

  it('drops the +tag of the local part: every tag reaches the same inbox', () => {
    expect(mailboxOf('victim+1@example.com')).toBe('victim@example.com');
    expect(mailboxOf('Victim+news+more@Example.com')).toBe('victim@example.com');
    expect(mailboxOf('+only@example.com')).toBe('@example.com');
  });

  it('keeps the dots of the local part, which most providers deliver to different inboxes', () => {
    expect(mailboxOf('first.last@example.com')).toBe('first.last@example.com');
  });

  it("at Gmail, drops the dots and names googlemail.com's inboxes under gmail.com", () => {
    expect(mailboxOf('First.Last+forms@gmail.com')).toBe('firstlast@gmail.com');
    expect(mailboxOf('f.i.r.s.t.last@googlemail.com')).toBe('firstlast@gmail.com');
  });

  it('cuts at the last @ (a quoted local part may hold one), and leaves a string without @ as it is, lower-cased', () => {
    expect(mailboxOf('"a@b"+x@Example.com')).toBe('"a@b"@example.com');
    expect(mailboxOf('Not-An-Address')).toBe('not-an-address');
  });
});

describe('the confirm link of a mailbox', () => {
  const signer = createConsentSigner('a-server-secret-of-at-least-32-characters');

  it('names the mailbox, not the address as typed, so every spelling confirms the same inbox', () => {
    const link = new URL(signer.link('https://forms.example.com', 'First.Last+x@googlemail.com'));
    expect(link.origin + link.pathname).toBe('https://forms.example.com/confirm');
    expect(link.searchParams.get('address')).toBe('firstlast@gmail.com');
    expect(signer.verify('firstlast@gmail.com', link.searchParams.get('token')!)).toBe(true);
  });

  it('is refused for another mailbox, with an altered token, or under another SECRET', () => {
    const token = signer.token('owner@example.com');
    expect(signer.verify('other@example.com', token)).toBe(false);
    expect(signer.verify('owner@example.com', `${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}`)).toBe(false);
    expect(signer.verify('owner@example.com', '')).toBe(false);
    expect(createConsentSigner('another-server-secret-of-32-characters!').verify('owner@example.com', token)).toBe(false);
  });
});
