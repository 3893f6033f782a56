// The pages' static assets: served from their own files with caching headers and revalidation.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../support/harness.ts';
import { request } from '../support/http.ts';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ worker: false });
});
afterAll(() => h?.stop());

describe('static assets', () => {
  it.each([
    ['/assets/site.css', /^text\/css/, ':root{'],
    ['/assets/home.js', /^application\/javascript/, "'use strict';"],
    ['/favicon.svg', /^image\/svg\+xml/, '<svg'],
  ])('%s is cached for an hour and revalidated by ETag', async (path, type, content) => {
    const first = await request(`${h.url}${path}`);
    expect(first.status).toBe(200);
    expect(first.headers['content-type']).toMatch(type);
    expect(first.headers['cache-control']).toBe('public, max-age=3600');
    expect(first.headers['x-content-type-options']).toBe('nosniff');
    expect(first.text).toContain(content);
    const etag = first.headers.etag!;
    expect(etag).toMatch(/^"[\w-]+"$/);
    const again = await request(`${h.url}${path}`, { headers: { 'if-none-match': etag } });
    expect(again.status).toBe(304);
    expect(again.text).toBe('');
  });

  it('serves the start page with its script from this origin only', async () => {
    const home = await request(`${h.url}/`);
    expect(home.status).toBe(200);
    expect(home.headers['content-security-policy']).toContain("script-src 'self'");
    expect(home.headers['cache-control']).toBe('no-store');
    expect(home.text).toContain('<script src="/assets/home.js" defer></script>');
    expect(home.text).toContain('name="botcheck"');
  });
});
