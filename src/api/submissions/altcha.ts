// ALTCHA, the captcha this service issues and checks itself (no third party): a proof-of-work
// challenge, HMAC-signed, bound to one key and an expiry, and accepted once.
// Protocol: altcha-lib 2 (PBKDF2/SHA-256). Each challenge names a secret counter; the browser tries
// counters until its derived key matches the signed prefix. The challenge carries the answer's key
// signature from the start, so checking an answer costs two HMACs and no key derivation.
import { createHmac, createSecretKey, randomInt, randomUUID, timingSafeEqual, type KeyObject } from 'node:crypto';
import { createChallenge, type Challenge, type Payload } from 'altcha-lib';
import { deriveKey } from 'altcha-lib/algorithms/pbkdf2';
import { batchedScript } from '../../shared/infra/queues/batched-script.ts';
import type { RedisClient } from '../../shared/infra/queues/redis.ts';
import { derivedSecret } from '../../shared/infra/secrets.ts';
import { errors, type ApiError } from '../api-errors.ts';
import type { OnceKey } from '../middleware/rate-limit.ts';

export const ALTCHA_FIELD = 'altcha';
/** A challenge must be solved and sent within this; long enough to write a message after ticking the box. */
export const ALTCHA_TTL_SECONDS = 20 * 60;
/** PBKDF2 iterations per tried counter: the server pays one derivation per challenge it issues. */
export const ALTCHA_COST = 1_000;
const ALGORITHM = 'PBKDF2/SHA-256';
/**
 * The longest answer read: an answer to this service's challenges is about 750 characters. A longer
 * one is refused unread, so that no client can make the check parse and walk a deeply nested value.
 */
const ANSWER_MAX_CHARS = 4_096;
/** A replay check Redis has not answered by then is given up (a submission waits at most twice this). */
const REPLAY_CHECK_TIMEOUT_MS = 1_000;
/** Key tags remembered at most: each is an HMAC the API would otherwise compute per submission. */
const KEY_TAGS_KEPT = 10_000;

/**
 * Each answer's mark set once, until its challenge expires, to the token of the submission that set
 * it: 1 where set now, 0 where already set. The keys share the prefix's hash tag, so one Redis
 * Cluster slot.
 */
const FIRST_USES = `
local answer = {}
for index, key in ipairs(KEYS) do
  answer[index] = redis.call('SET', key, ARGV[index * 2 - 1], 'PX', ARGV[index * 2], 'NX') and 1 or 0
end
return answer`;

/** Each mark removed where it still holds the given token (another submission's mark stays): 1 where removed. */
const RELEASES = `
local answer = {}
for index, key in ipairs(KEYS) do
  answer[index] = redis.call('GET', key) == ARGV[index] and redis.call('DEL', key) or 0
end
return answer`;

/** An answer after the checks that need neither its key nor Redis: its refusal, or its key's tag and its replay mark. */
export type CheckedAnswer = { refusal: ApiError } | { keyTag: string; mark: OnceKey };

export type Altcha = {
  /** A new challenge for the key with this id, as the widget fetches it. */
  challenge: (keyId: string) => Promise<Challenge>;
  /** Checks what needs neither the key nor Redis: the answer's form, signatures and expiry. */
  check: (answer: unknown) => CheckedAnswer;
  /**
   * Throws the form-style 400 unless the answer solves a live challenge of this key not used before,
   * and sets its mark. `marked`: the mark was set already (by the rate limit's call), this is its outcome.
   */
  verify: (keyId: string, answer: CheckedAnswer, marked?: boolean | Error) => Promise<void>;
  /** Removes the answer's mark, which this submission set: it was refused, and the visitor may send the answer again. */
  release: (answer: CheckedAnswer) => void;
};

export function createAltcha(options: { secret: string; maxCounter: number; redis: RedisClient; prefix: string }): Altcha {
  const { maxCounter, redis, prefix } = options;
  const signatureSecret = derivedSecret(options.secret, 'altcha challenge signature');
  const keySignatureSecret = derivedSecret(options.secret, 'altcha key signature');
  // Imported once: an HMAC keyed by a string imports its key on every call.
  const signatureKey = createSecretKey(Buffer.from(signatureSecret));
  const keySignatureKey = createSecretKey(Buffer.from(keySignatureSecret));
  const keyTagSecret = derivedSecret(options.secret, 'altcha key tag');
  // The challenge names the key by a tag, not by its id: the id stays private to its owner.
  const keyTags = new Map<string, string>();
  const keyTag = (keyId: string) => {
    let tag = keyTags.get(keyId);
    if (tag === undefined) {
      if (keyTags.size >= KEY_TAGS_KEPT) keyTags.clear();
      tag = createHmac('sha256', keyTagSecret).update(keyId).digest('base64url').slice(0, 22);
      keyTags.set(keyId, tag);
    }
    return tag;
  };
  // Made at the first answer: issuing challenges needs no Redis.
  let marks: ReturnType<typeof replayMarks> | undefined;

  return {
    challenge: async (keyId) => {
      const challenge = await createChallenge({
        algorithm: ALGORITHM,
        cost: ALTCHA_COST,
        // At least half the maximum: no challenge is a free pass.
        counter: randomInt(Math.ceil(maxCounter / 2), maxCounter + 1),
        deriveKey,
        data: { key: keyTag(keyId) },
        expiresAt: Math.floor(Date.now() / 1000) + ALTCHA_TTL_SECONDS,
        hmacSignatureSecret: signatureSecret,
        hmacKeySignatureSecret: keySignatureSecret,
      });
      // Sent in the order they are signed in: the widget sends them back as received, and the check
      // then serialises them as they are, without sorting.
      return { ...challenge, parameters: sortKeys(challenge.parameters) as Challenge['parameters'] };
    },

    check(answer) {
      if (typeof answer !== 'string' || answer.trim() === '') return { refusal: refusal('Complete the captcha.', 'Captcha required.') };
      const payload = parsePayload(answer);
      if (!payload) return { refusal: refusal('The captcha answer is malformed.', 'Captcha verification failed.') };
      const { challenge, solution } = payload;
      // Made only when needed: an error captures its stack.
      const failed = () => ({ refusal: refusal('Captcha verification failed.', 'Captcha verification failed.') });
      // The checks of altcha-lib's verifySolution, on node:crypto: its WebCrypto HMACs cost the API
      // ten times the CPU per submission (npm run bench, 1).
      if (!safeEqual(challenge.signature ?? '', hmacHex(signatureKey, canonicalJson(challenge.parameters)))) return failed();
      // Signed from here on: every parameter is as this service issued it.
      const expiresAtMs = (challenge.parameters.expiresAt ?? 0) * 1000;
      if (expiresAtMs < Date.now()) return { refusal: refusal('The captcha expired. Please solve it again.', 'Captcha expired.') };
      const solved =
        /^(?:[0-9a-f]{2})+$/.test(solution.derivedKey) &&
        safeEqual(challenge.parameters.keySignature ?? '', hmacHex(keySignatureKey, Buffer.from(solution.derivedKey, 'hex')));
      if (!solved) return failed();
      // Accepted once: the challenge's signature (checked above: 64 hex digits this service wrote) is
      // remembered until the challenge expires.
      return {
        keyTag: String(challenge.parameters.data?.key),
        mark: { key: `${prefix}:altcha:${challenge.signature!}`, token: randomUUID(), ttlMs: Math.max(1, expiresAtMs - Date.now()) },
      };
    },

    async verify(keyId, answer, marked) {
      if ('refusal' in answer) throw answer.refusal;
      // Signed, so only this service could have written it.
      if (answer.keyTag !== keyTag(keyId)) throw refusal('The captcha was solved for another access key.', 'Captcha verification failed.');
      marks ??= replayMarks(redis);
      const first = marked ?? (await marks.setFirst(answer.mark));
      if (first instanceof Error) {
        // Unchecked, an answer could be used twice: refused for now, as an unreachable captcha
        // provider is. A call that timed out may still set the mark once Redis answers: it is taken
        // back after it (one connection runs its commands in order), so that the visitor's retry
        // with the same answer is not refused as a replay. Where Redis cannot take it, it stays.
        void marks.release(answer.mark);
        throw errors.captchaUnavailable();
      }
      if (!first) throw refusal('The captcha answer was already used. Please solve it again.', 'Captcha already used.');
    },

    release(answer) {
      if ('refusal' in answer) return;
      marks ??= replayMarks(redis);
      void marks.release(answer.mark);
    },
  };
}

type ReplayMark = Pick<OnceKey, 'key' | 'token'>;

/**
 * Marks answers as used, the answers of concurrent submissions in one script call: each in its
 * order, so of two equal answers in one call only the first is accepted. A mark is released only
 * by the submission that set it.
 */
const replayMarks = (redis: RedisClient) => ({
  setFirst: batchedScript<OnceKey, boolean>(redis, {
    name: 'cfsAltchaFirstUses',
    lua: FIRST_USES,
    call: (marks) => ({ keys: marks.map((mark) => mark.key), args: marks.flatMap((mark) => [mark.token, mark.ttlMs]) }),
    answers: (reply) => reply.map((set) => set === 1),
    failFast: { timeoutMs: REPLAY_CHECK_TIMEOUT_MS, timeoutMessage: 'altcha replay check timed out' },
  }),
  // Sent on the same connection as the mark, behind it. Fail-fast like the mark: while Redis is
  // away the mark was not sent either, and no release waits in the client's offline queue.
  release: batchedScript<ReplayMark, boolean>(redis, {
    name: 'cfsAltchaReleases',
    lua: RELEASES,
    call: (marks) => ({ keys: marks.map((mark) => mark.key), args: marks.map((mark) => mark.token) }),
    answers: (reply) => reply.map((removed) => removed === 1),
    failFast: { timeoutMs: REPLAY_CHECK_TIMEOUT_MS, timeoutMessage: 'altcha replay mark release timed out' },
  }),
});

const hmacHex = (secret: KeyObject, data: string | Buffer) => createHmac('sha256', secret).update(data).digest('hex');

/** Equal strings, in a time that does not tell how much of them matched. */
function safeEqual(a: string, b: string): boolean {
  const [left, right] = [Buffer.from(a), Buffer.from(b)];
  return left.length === right.length && timingSafeEqual(left, right);
}

/**
 * The parameters as altcha-lib signs them: keys sorted at every depth, as JSON. A widget sends the
 * challenge back as this service issued it, already in that order: then it is serialised as it is.
 */
const canonicalJson = (parameters: object) => JSON.stringify(isSorted(parameters) ? parameters : sortKeys(parameters));

const isSorted = (value: unknown): boolean => {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return true;
  let previous = '';
  for (const [name, inner] of Object.entries(value)) {
    if (name < previous || inner === undefined || !isSorted(inner)) return false;
    previous = name;
  }
  return true;
};

const sortKeys = (value: unknown): unknown =>
  typeof value === 'object' && value !== null && !Array.isArray(value)
    ? Object.fromEntries(
        Object.keys(value)
          .sort()
          .flatMap((name) => {
            const inner = (value as Record<string, unknown>)[name];
            return inner === undefined ? [] : [[name, sortKeys(inner)]];
          }),
      )
    : value;

const refusal = (fieldMessage: string, message: string) => errors.invalidFields({ [ALTCHA_FIELD]: [fieldMessage] }, message);

/** The widget's answer: base64 of `{ challenge: { parameters, signature }, solution: { counter, derivedKey } }`. */
function parsePayload(answer: string): Payload | undefined {
  if (answer.length > ANSWER_MAX_CHARS) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(answer, 'base64').toString('utf8'));
  } catch {
    return undefined;
  }
  if (!isObject(value) || !isObject(value.challenge) || !isObject(value.solution)) return undefined;
  const { challenge, solution } = value;
  if (!isObject(challenge.parameters) || typeof challenge.signature !== 'string') return undefined;
  if (typeof solution.counter !== 'number' || typeof solution.derivedKey !== 'string') return undefined;
  return value as unknown as Payload;
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
