// The return path of each email (VERP): an envelope sender at BOUNCE_DOMAIN that names its row and
// carries a MAC under SECRET, so that anyone can send a report to the receiver but only this
// service can make an address it accepts.
import { describe, expect, it } from 'vitest';
import { createReturnPaths } from '../../../src/shared/bounces/return-path.ts';

const SECRET = 'a-server-secret-of-at-least-32-characters';
const paths = createReturnPaths(SECRET, 'Bounces.Example.com');
const ID = '0f8fad5b-d9cb-469f-a165-70867728950e';

describe('a return path', () => {
  it('names the kind and the row, at BOUNCE_DOMAIN in lower case, and reads back to them', () => {
    const address = paths.address('submission', ID);
    expect(address).toMatch(/^b-s-0f8fad5bd9cb469fa16570867728950e-[0-9a-f]{16}@bounces\.example\.com$/);
    expect(paths.read(address)).toEqual({ kind: 'submission', id: ID });
    expect(paths.read(paths.address('key-email', ID))).toEqual({ kind: 'key-email', id: ID });
  });

  it('is 53 characters before the @, within the 64 that SMTP allows', () => {
    expect(paths.address('submission', ID).split('@')[0]).toHaveLength(53);
  });

  it('is read back whatever case a relay gave it, and around spaces', () => {
    expect(paths.read(` ${paths.address('submission', ID).toUpperCase()} `)).toEqual({ kind: 'submission', id: ID });
  });

  it('gives each row and each kind its own MAC', () => {
    const mac = (address: string) => address.split('@')[0]!.split('-').pop();
    expect(mac(paths.address('submission', ID))).not.toBe(mac(paths.address('key-email', ID)));
    expect(mac(paths.address('submission', ID))).not.toBe(mac(paths.address('submission', ID.replace(/e$/, 'f'))));
  });
});

describe('a return path that this service did not make', () => {
  const address = paths.address('submission', ID);
  const [local, domain] = address.split('@') as [string, string];

  it('is refused when its MAC was altered', () => {
    const mac = local.slice(-16);
    const altered = `${local.slice(0, -16)}${mac.slice(0, -1)}${mac.endsWith('0') ? '1' : '0'}@${domain}`;
    expect(paths.read(altered)).toBeUndefined();
  });

  it("is refused when its row was changed to another's, keeping the MAC", () => {
    const otherRow = local.replace('0f8fad5b', '0f8fad5c');
    expect(paths.read(`${otherRow}@${domain}`)).toBeUndefined();
  });

  it('is refused when its kind was changed, keeping the MAC', () => {
    expect(paths.read(address.replace(/^b-s-/, 'b-k-'))).toBeUndefined();
  });

  it('is refused at another domain, or under another SECRET', () => {
    expect(paths.read(`${local}@elsewhere.example.com`)).toBeUndefined();
    expect(createReturnPaths('another-server-secret-of-32-characters!', 'bounces.example.com').read(address)).toBeUndefined();
  });

  it('is refused when it is not a return path at all', () => {
    for (const other of ['postmaster@bounces.example.com', 'b-s-xyz@bounces.example.com', `b-x-${local.slice(4)}@${domain}`, `${local}-00@${domain}`, '']) {
      expect(paths.read(other), other).toBeUndefined();
    }
  });
});
