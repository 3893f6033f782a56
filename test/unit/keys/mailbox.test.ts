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

  it("at Yandex, names each of an account's domains under yandex.ru, and reads a dot in the name as a hyphen", () => {
    for (const domain of ['yandex.ru', 'ya.ru', 'yandex.com', 'yandex.by', 'yandex.kz', 'yandex.ua', 'narod.ru']) {
      expect(mailboxOf(`X@${domain}`)).toBe('x@yandex.ru');
    }
    expect(mailboxOf('ivan.petrov+forms@ya.ru')).toBe('ivan-petrov@yandex.ru');
    expect(mailboxOf('ivan-petrov@yandex.com')).toBe('ivan-petrov@yandex.ru');
  });

  it('at Proton, names every domain under proton.me and drops the dots, hyphens and underscores it ignores', () => {
    for (const address of ['alice.jones@proton.me', 'alice_jones@protonmail.com', 'alice-jones@protonmail.ch', 'alicejones+x@pm.me']) {
      expect(mailboxOf(address)).toBe('alicejones@proton.me');
    }
  });

  it("at Apple, names me.com's and mac.com's inboxes under icloud.com, keeping the dots", () => {
    expect(mailboxOf('pat.lee@me.com')).toBe('pat.lee@icloud.com');
    expect(mailboxOf('pat.lee+shop@mac.com')).toBe('pat.lee@icloud.com');
    expect(mailboxOf('pat.lee@icloud.com')).toBe('pat.lee@icloud.com');
  });

  it("at Fastmail, reads subdomain addressing as the name's own inbox, and keeps its domains apart", () => {
    expect(mailboxOf('shop@jo.fastmail.com')).toBe('jo@fastmail.com');
    expect(mailboxOf('news@jo.fastmail.fm')).toBe('jo@fastmail.fm');
    expect(mailboxOf('jo@fastmail.fm')).toBe('jo@fastmail.fm');
    expect(mailboxOf('x@a.b.fastmail.com')).toBe('x@a.b.fastmail.com');
  });

  it("keeps Microsoft's domains apart: one name at outlook.com, hotmail.com and live.com can be three people", () => {
    expect(new Set(['sam@outlook.com', 'sam@hotmail.com', 'sam@live.com'].map(mailboxOf)).size).toBe(3);
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
