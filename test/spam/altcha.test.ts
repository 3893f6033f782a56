// ALTCHA as a key's captcha, through the real API: a client without a browser follows the
// documented protocol (fetch a challenge, solve it, send the answer in `altcha`) and is accepted;
// each kind of bad answer is refused with its own 400 naming the field.
import { createHmac } from 'node:crypto';
import { solveChallenge, type Challenge } from 'altcha-lib';
import { deriveKey } from 'altcha-lib/algorithms/pbkdf2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { derivedSecret } from '../../src/shared/infra/secrets.ts';
import { postJson, startHarness, TEST_SECRET, type Harness } from '../support/harness.ts';
import { submitMultipart } from '../support/client.ts';
import { postRaw } from '../support/multipart.ts';

const TOKEN = 'altcha-test-admin-token-0123';
let h: Harness;

beforeAll(async () => {
  // A small difficulty: these tests solve many challenges; the browser test uses the default.
  h = await startHarness({ env: { ADMIN_TOKEN: TOKEN, ALTCHA_MAX_COUNTER: '20' } });
});

afterAll(async () => {
  await h?.stop();
});

const challengeUrl = (accessKey: string) => `${h.url}/api/contact-api/altcha-challenge?access_key=${encodeURIComponent(accessKey)}`;

async function fetchChallenge(accessKey: string): Promise<Challenge> {
  const response = await fetch(challengeUrl(accessKey));
  expect(response.status).toBe(200);
  return (await response.json()) as Challenge;
}

/** What the widget puts in the form: base64 of the challenge and its solution, as JSON. */
async function solve(challenge: Challenge): Promise<string> {
  const solution = await solveChallenge({ challenge, deriveKey });
  expect(solution).not.toBeNull();
  return Buffer.from(JSON.stringify({ challenge, solution })).toString('base64');
}

const submit = (accessKey: string, altcha?: string) =>
  postJson(`${h.url}/api/contact-api/`, {
    access_key: accessKey,
    email: 'visitor@example.test',
    message: 'Hello',
    ...(altcha === undefined ? {} : { altcha }),
  });

const expectRefused = (response: Awaited<ReturnType<typeof submit>>, fieldMessage: string, message: string) => {
  expect(response.status).toBe(400);
  expect(response.json).toMatchObject({ success: false, message, errors: { altcha: [fieldMessage], __all__: [message] } });
};

/** Sorted keys, as altcha-lib signs them. */
const canonical = (value: unknown): unknown =>
  value && typeof value === 'object' && !Array.isArray(value)
    ? Object.fromEntries(
        Object.keys(value)
          .sort()
          .map((name) => [name, canonical((value as Record<string, unknown>)[name])]),
      )
    : value;

describe('ALTCHA as a key captcha', () => {
  it('accepts a JSON client that fetches a challenge, solves it and sends the answer; then refuses the same answer again', async () => {
    const key = await h.createKey({ captcha: 'altcha' });
    const challengeResponse = await fetch(challengeUrl(key.key), { headers: { Origin: 'https://site.example' } });
    expect(challengeResponse.status).toBe(200);
    expect(challengeResponse.headers.get('access-control-allow-origin')).toBe('*');
    expect(challengeResponse.headers.get('cache-control')).toBe('no-store');
    const challenge = (await challengeResponse.json()) as Challenge;
    expect(challenge.parameters.algorithm).toBe('PBKDF2/SHA-256');

    const answer = await solve(challenge);
    const accepted = await submit(key.key, answer);
    expect(accepted.status).toBe(200);
    const rows = await h.sql('select custom_fields from submissions where id = $1', [accepted.json.submission_id]);
    // The answer is the captcha's, not a field of the message.
    expect(rows).toEqual([{ custom_fields: [] }]);

    expectRefused(await submit(key.key, answer), 'The captcha answer was already used. Please solve it again.', 'Captcha already used.');
  });

  it('accepts an answer whose client put the challenge parameters in another order (they are signed sorted)', async () => {
    const key = await h.createKey({ captcha: 'altcha' });
    const challenge = await fetchChallenge(key.key);
    const solution = await solveChallenge({ challenge, deriveKey });
    const reversed = (value: Record<string, unknown>): Record<string, unknown> =>
      Object.fromEntries(
        Object.entries(value)
          .reverse()
          .map(([name, inner]) => [name, inner && typeof inner === 'object' && !Array.isArray(inner) ? reversed(inner as Record<string, unknown>) : inner]),
      );
    const parameters = reversed(challenge.parameters as unknown as Record<string, unknown>);
    expect(Object.keys(parameters)).not.toEqual(Object.keys(challenge.parameters).sort());
    const answer = Buffer.from(JSON.stringify({ challenge: { ...challenge, parameters }, solution })).toString('base64');
    expect((await submit(key.key, answer)).status).toBe(200);
  });

  it('accepts one answer sent many times at once exactly once, and the other answers of the same burst each once', async () => {
    const key = await h.createKey({ captcha: 'altcha' });
    const replayed = await solve(await fetchChallenge(key.key));
    const others = await Promise.all([1, 2, 3].map(async () => solve(await fetchChallenge(key.key))));
    const responses = await Promise.all([...Array.from({ length: 8 }, () => submit(key.key, replayed)), ...others.map((answer) => submit(key.key, answer))]);
    const statuses = responses.map((response) => response.status);
    expect(statuses.slice(0, 8).filter((status) => status === 200)).toHaveLength(1);
    for (const refused of responses.slice(0, 8).filter((response) => response.status !== 200)) {
      expectRefused(refused, 'The captcha answer was already used. Please solve it again.', 'Captcha already used.');
    }
    expect(statuses.slice(8)).toEqual([200, 200, 200]);
    const rows = await h.sql('select count(*)::int as count from submissions where key_id = $1', [key.id]);
    expect(rows).toEqual([{ count: 4 }]);
  });

  it('lets an answer whose submission was refused be sent again, in every body type, and then accepts it once', async () => {
    const key = await h.createKey({ captcha: 'altcha' });
    const other = await h.createKey({ captcha: 'altcha' });
    type Fields = Record<string, string>;
    const url = `${h.url}/api/contact-api/`;
    // Small JSON and urlencoded bodies are read before the rate limit, whose call sets the mark; the others after it.
    const senders: Record<string, (fields: Fields) => Promise<{ status: number; json: any }>> = {
      'small JSON': (fields) => postJson(url, fields),
      'JSON over 16 KiB': (fields) => postJson(url, { ...fields, padding: 'x'.repeat(20_000) }),
      urlencoded: (fields) => postRaw(url, Buffer.from(new URLSearchParams(fields).toString()), { 'content-type': 'application/x-www-form-urlencoded' }),
      multipart: (fields) =>
        submitMultipart(
          h,
          Object.entries(fields).map(([name, value]) => ({ name, value })),
        ),
    };
    for (const [kind, send] of Object.entries(senders)) {
      const answer = await solve(await fetchChallenge(key.key));
      const fields = { access_key: key.key, email: 'visitor@example.test', message: `Hello by ${kind}`, altcha: answer };

      const invalid = await send({ ...fields, email: 'not an address' });
      expect(invalid.status, kind).toBe(400);
      expect(invalid.json.errors, kind).toEqual({ email: ['Enter a valid email address.'], __all__: [expect.any(String)] });
      const otherKey = await send({ ...fields, access_key: other.key });
      expect(otherKey.status, kind).toBe(400);
      expect(otherKey.json.errors.altcha, kind).toEqual(['The captcha was solved for another access key.']);

      expect((await send(fields)).status, kind).toBe(200);
      const replay = await send(fields);
      expect(replay.status, kind).toBe(400);
      expect(replay.json.errors.altcha, kind).toEqual(['The captcha answer was already used. Please solve it again.']);
    }
    const stored = await h.sql('select message from submissions where key_id = $1 order by created_at', [key.id]);
    expect(stored.map((row: any) => row.message)).toEqual(Object.keys(senders).map((kind) => `Hello by ${kind}`));
    expect(await h.sql('select count(*)::int as n from submissions where key_id = $1', [other.id])).toEqual([{ n: 0 }]);
  });

  it('refuses a missing, malformed, tampered, unsolved, expired or other-key answer', async () => {
    const key = await h.createKey({ captcha: 'altcha' });
    const other = await h.createKey({ captcha: 'altcha' });

    expectRefused(await submit(key.key), 'Complete the captcha.', 'Captcha required.');
    expectRefused(await submit(key.key, 'not a payload'), 'The captcha answer is malformed.', 'Captcha verification failed.');
    expectRefused(
      await submit(key.key, Buffer.from(JSON.stringify({ challenge: 'x', solution: 1 })).toString('base64')),
      'The captcha answer is malformed.',
      'Captcha verification failed.',
    );

    // Far larger than any answer this service issues (about 750 characters), nested 30,000 deep: refused before it is read.
    const nested = `{"challenge":{"signature":"x","parameters":${'{"a":'.repeat(30_000)}1${'}'.repeat(30_000)}},"solution":{"counter":1,"derivedKey":"00"}}`;
    expectRefused(await submit(key.key, Buffer.from(nested).toString('base64')), 'The captcha answer is malformed.', 'Captcha verification failed.');

    // Solved for the other key: its signature is valid, the key it names is not this one.
    expectRefused(
      await submit(key.key, await solve(await fetchChallenge(other.key))),
      'The captcha was solved for another access key.',
      'Captcha verification failed.',
    );

    // A made-up derived key: right shape, no work done.
    const unsolved = await fetchChallenge(key.key);
    const guess = Buffer.from(JSON.stringify({ challenge: unsolved, solution: { counter: 1, derivedKey: '00'.repeat(32) } })).toString('base64');
    expectRefused(await submit(key.key, guess), 'Captcha verification failed.', 'Captcha verification failed.');

    // A solved challenge whose expiry was pushed back: the signature no longer matches.
    const tampered = JSON.parse(Buffer.from(await solve(await fetchChallenge(key.key)), 'base64').toString()) as { challenge: Challenge };
    tampered.challenge.parameters.expiresAt = Math.floor(Date.now() / 1000) + 86_400;
    expectRefused(
      await submit(key.key, Buffer.from(JSON.stringify(tampered)).toString('base64')),
      'Captcha verification failed.',
      'Captcha verification failed.',
    );

    // A challenge of this service for this key, signed as it signs them, whose expiry has passed.
    const expired = await fetchChallenge(key.key);
    const solvedLate = JSON.parse(Buffer.from(await solve(expired), 'base64').toString()) as { challenge: Challenge };
    solvedLate.challenge.parameters.expiresAt = Math.floor(Date.now() / 1000) - 1;
    solvedLate.challenge.signature = createHmac('sha256', derivedSecret(TEST_SECRET, 'altcha challenge signature'))
      .update(JSON.stringify(canonical(solvedLate.challenge.parameters)))
      .digest('hex');
    expectRefused(
      await submit(key.key, Buffer.from(JSON.stringify(solvedLate)).toString('base64')),
      'The captcha expired. Please solve it again.',
      'Captcha expired.',
    );

    // None of these left a submission.
    expect(await h.sql('select count(*)::int as n from submissions where key_id = $1', [key.id])).toEqual([{ n: 0 }]);
  });

  it('gives challenges only for an active key, with CORS on the preflight, and serves the widget script', async () => {
    const unknown = await fetch(challengeUrl('not-a-key'));
    expect(unknown.status).toBe(403);
    expect(unknown.headers.get('access-control-allow-origin')).toBe('*');
    expect((await fetch(`${h.url}/api/contact-api/altcha-challenge`)).status).toBe(403);

    const preflight = await fetch(challengeUrl('any'), {
      method: 'OPTIONS',
      headers: { Origin: 'https://site.example', 'Access-Control-Request-Method': 'GET' },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-methods')).toBe('GET, OPTIONS');

    const script = await fetch(`${h.url}/assets/altcha.min.js`);
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toBe('application/javascript; charset=utf-8');
    expect(script.headers.get('cache-control')).toBe('public, max-age=604800');
    expect(await script.text()).toContain('altcha-widget');
  });

  it('can be set as a key captcha by the admin API', async () => {
    const key = await h.createKey();
    const patched = await fetch(`${h.url}/admin/keys/${key.key}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ captcha: 'altcha' }),
    });
    expect(patched.status).toBe(200);
    expect(((await patched.json()) as { captcha: unknown }).captcha).toBe('altcha');
    expectRefused(await submit(key.key), 'Complete the captcha.', 'Captcha required.');
  });
});
