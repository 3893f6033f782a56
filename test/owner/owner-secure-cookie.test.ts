// Behind HTTPS (PUBLIC_URL https), the owner console's session cookie is Secure as well.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startHarness, type Harness } from '../support/harness.ts';
import { askForLink, postForm } from '../support/owner.ts';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ env: { PUBLIC_URL: 'https://forms.example.test' } });
});
afterAll(() => h?.stop());

it('sets the session cookie Secure, HttpOnly, SameSite=Lax when PUBLIC_URL is https', async () => {
  const owner = await h.createKey();
  const link = await askForLink(h, owner.email);
  const used = await postForm(h, '/owner/link', { token: link.searchParams.get('token')! });
  expect(used.status).toBe(303);
  expect([used.headers['set-cookie']].flat().join('')).toMatch(/^owner_session=[\w-]{43}; Path=\/owner; Max-Age=604800; HttpOnly; SameSite=Lax; Secure$/);
  const signedOut = await postForm(h, '/owner/sign-out', {}, { cookie: `owner_session=x` });
  expect(signedOut.status).toBe(303); // no session: to the sign-in page
});
