// Credentials never reach a log: the key of /admin/keys/<key>, and the values of `key`,
// `access_key` and `token`, in every spelling a client could send them under.
import { describe, expect, it } from 'vitest';
import { isAdminPath } from '../../../src/api/middleware/admin-auth.ts';
import { redactPath, redactQuery } from '../../../src/api/redact.ts';

const KEY = '9f2c4e1a-7b3d-4c5e-8f6a-1b2c3d4e5f60';

describe('a logged path', () => {
  it('has the key of /admin/keys/<key> replaced, the rest kept', () => {
    expect(redactPath(`/admin/keys/${KEY}`)).toBe('/admin/keys/[redacted]');
    expect(redactPath(`/admin/keys/${KEY}/domains`)).toBe('/admin/keys/[redacted]/domains');
  });

  it('has the key replaced however the path is spelled: case, escapes, backslashes, doubled slashes, dot segments', () => {
    for (const path of [
      `/ADMIN/Keys/${KEY}`,
      `/%61dmin/%6Beys/${KEY}`,
      `/%2561dmin/keys/${KEY}`,
      `\\admin\\keys\\${KEY}`,
      `//admin///keys/${KEY}`,
      `/x/../admin/./keys/${KEY}`,
      `/admin/keys/${encodeURIComponent(KEY)}`,
    ]) {
      expect(redactPath(path), path).not.toContain(KEY);
      expect(redactPath(path), path).toContain('[redacted]');
    }
  });

  it('has a segment redacted even when a later `..` takes it back out of the route', () => {
    expect(redactPath(`/admin/keys/${KEY}/../other`)).not.toContain(KEY);
  });

  it('without a key is kept exactly as it came', () => {
    for (const path of ['/', '/api/contact-api/', '/admin/keys', '/admin/submissions/0b7e2c9a-1d2e-4f3a-9b8c-7d6e5f4a3b2c', '/owner/keys/abc']) {
      expect(redactPath(path)).toBe(path);
    }
  });
});

describe('a logged query', () => {
  it('has the values of key, access_key and token replaced, the other parameters kept', () => {
    expect(redactQuery(`access_key=${KEY}&email=a%40example.com`)).toBe('access_key=[redacted]&email=a%40example.com');
    expect(redactQuery(`address=a%40example.com&token=abc123`)).toBe('address=a%40example.com&token=[redacted]');
    expect(redactQuery(`key=${KEY}`)).toBe('key=[redacted]');
  });

  it('has them replaced under every spelling the API does not read, too: case, brackets, escapes, `+`, `;`', () => {
    for (const query of [
      `KEY=${KEY}`,
      `key[]=${KEY}`,
      `key%5B0%5D=${KEY}`,
      `key.x=${KEY}`,
      `k%65y=${KEY}`,
      `x=1;token=${KEY}`,
      `+key+=${KEY}`,
      `Access_Key=${KEY}`,
    ]) {
      expect(redactQuery(query), query).not.toContain(KEY);
    }
  });

  it('keeps a parameter whose name only contains a credential word', () => {
    expect(redactQuery('keyword=x&monkey=y&tokens=z')).toBe('keyword=x&monkey=y&tokens=z');
  });
});

describe('the request log', () => {
  it('keeps paths and queries without keys as they are', () => {
    expect(redactPath('/admin/submissions/0b7e2c9a-1d2e-4f3a-9b8c-7d6e5f4a3b2c')).toBe('/admin/submissions/0b7e2c9a-1d2e-4f3a-9b8c-7d6e5f4a3b2c');
    expect(redactPath('/admin/keys')).toBe('/admin/keys');
    expect(redactPath('//admin//keys/abc/extra')).toBe('//admin//keys/[redacted]/extra');
    expect(redactQuery('email=a%40example.com&limit=5')).toBe('email=a%40example.com&limit=5');
    expect(redactQuery('k%65y=secret&x=1')).toBe('k%65y=[redacted]&x=1');
  });
});

describe('the operator surface', () => {
  it('is every path whose first segment, however spelled, starts with admin', () => {
    for (const path of ['/admin', '/ADMIN/keys', '/%61dmin/x', '//admin', '/x/../admin/keys', '\\admin', '/admin;x', '/administrator'])
      expect(isAdminPath(path), path).toBe(true);
    for (const path of ['/', '/api/contact-api/', '/owner/admin', '/x/admin']) expect(isAdminPath(path), path).toBe(false);
  });
});
