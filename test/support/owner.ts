// The owner console from a test's side: ask for a sign-in link, take it from the SMTP sink, sign
// in through HTTP, and call pages and the JSON API with the session cookie.
import { expect } from 'vitest';
import type { ReceivedMail } from './smtp-sink.ts';
import { eventually, type Harness } from './harness.ts';
import { request, type RawResponse } from './http.ts';

export const SIGN_IN_SUBJECT = 'Sign in to your contact form keys';

export type OwnerClient = {
  cookie: string;
  csrf: string;
  get: (path: string, headers?: Record<string, string>) => Promise<RawResponse>;
  /** A form POST from this origin (Origin: the API's), with the CSRF token unless given. */
  post: (path: string, fields?: Record<string, string>, headers?: Record<string, string>) => Promise<RawResponse>;
  api: (method: string, path: string, body?: unknown, headers?: Record<string, string>) => Promise<RawResponse>;
};

export const signInMailsTo = (h: Harness, email: string) =>
  h.sink.messages.filter((mail) => mail.envelope.to.includes(email) && mail.parsed.subject === SIGN_IN_SUBJECT);

/** The link in a sign-in email, moved to the API's real origin (the harness's PUBLIC_URL names port 0). */
export function linkIn(h: Harness, mail: ReceivedMail): URL {
  const match = /(https?:\/\/\S+\/owner\/link\?token=[\w-]+)/.exec(mail.parsed.text ?? '');
  if (!match) throw new Error(`no sign-in link in:\n${mail.parsed.text}`);
  const link = new URL(match[1]!);
  return new URL(`${link.pathname}${link.search}`, h.url);
}

export function postForm(h: Harness, path: string, fields: Record<string, string>, headers: Record<string, string> = {}) {
  return request(`${h.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: h.url, ...headers },
    body: new URLSearchParams(fields).toString(),
  });
}

/** Asks for a link for `email` and waits for its email (the n-th to that address). */
export async function askForLink(h: Harness, email: string): Promise<URL> {
  const before = signInMailsTo(h, email).length;
  const asked = await postForm(h, '/owner/sign-in', { email });
  expect(asked.status).toBe(200);
  const mail = await eventually(async () => signInMailsTo(h, email)[before], 20_000, `sign-in email to ${email}`);
  return linkIn(h, mail);
}

export const sessionCookieOf = (response: RawResponse) => /owner_session=([^;]*)/.exec([response.headers['set-cookie'] ?? []].flat().join('\n'))?.[1];

export const csrfIn = (html: string) => /name="csrf_token" value="([^"]+)"/.exec(html)?.[1] ?? '';

export function ownerClient(h: Harness, cookie: string, csrf = ''): OwnerClient {
  const client: OwnerClient = {
    cookie,
    csrf,
    get: (path, headers = {}) => request(`${h.url}${path}`, { headers: { cookie: `owner_session=${cookie}`, ...headers } }),
    post: (path, fields = {}, headers = {}) => postForm(h, path, { csrf_token: client.csrf, ...fields }, { cookie: `owner_session=${cookie}`, ...headers }),
    api: (method, path, body, headers = {}) =>
      request(`${h.url}/owner/api${path}`, {
        method,
        headers: {
          cookie: `owner_session=${cookie}`,
          'x-csrf-token': client.csrf,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...headers,
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      }),
  };
  return client;
}

/** Signs `email` in through the link page's button; returns a client holding the session. */
export async function signIn(h: Harness, email: string): Promise<OwnerClient> {
  const link = await askForLink(h, email);
  const used = await postForm(h, '/owner/link', { token: link.searchParams.get('token') ?? '' });
  expect(used.status).toBe(303);
  const cookie = sessionCookieOf(used);
  expect(cookie).toBeTruthy();
  const keys = await request(`${h.url}/owner/keys`, { headers: { cookie: `owner_session=${cookie}` } });
  expect(keys.status).toBe(200);
  return ownerClient(h, cookie!, csrfIn(keys.text));
}
