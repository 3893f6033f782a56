// Captcha per key: hCaptcha or Cloudflare Turnstile, verified server-side against the provider's
// verify URL (configurable, so it can be tested against a local endpoint); or ALTCHA, issued and
// checked by this service alone (altcha.ts).
import type { Config } from '../../shared/infra/config.ts';
import type { CaptchaProvider } from '../../shared/keys/entities.ts';
import { errors } from '../api-errors.ts';
import { ALTCHA_FIELD, type Altcha, type CheckedAnswer } from './altcha.ts';
import type { RawFields } from './input.ts';

export const CAPTCHA_FIELDS: Record<CaptchaProvider, string> = {
  hcaptcha: 'h-captcha-response',
  turnstile: 'cf-turnstile-response',
  altcha: ALTCHA_FIELD,
};

type CaptchaConfig = Pick<Config, 'HCAPTCHA_SECRET' | 'HCAPTCHA_VERIFY_URL' | 'TURNSTILE_SECRET' | 'TURNSTILE_VERIFY_URL'>;

const VERIFY_TIMEOUT_MS = 5_000;
/**
 * The longest answer passed on to hCaptcha or Turnstile: their tokens are a few thousand characters
 * (Turnstile's at most 2,048). A longer one is refused without asking, so that no client can make
 * the API post near a megabyte to the provider per submission.
 */
const PROVIDER_ANSWER_MAX_CHARS = 8_192;

/** The key the submission came with, and its captcha. */
type CaptchaKey = { id: string; captcha: CaptchaProvider };

/**
 * Throws the form-style error when the captcha answer is missing or refused by the provider.
 * `checkedAltcha`: the ALTCHA answer checked already, and its mark's outcome where it was set with
 * the rate limit. Answers the ALTCHA answer this submission now holds (its mark set).
 */
export async function verifyCaptcha(
  key: CaptchaKey,
  fields: RawFields,
  clientIp: string,
  config: CaptchaConfig,
  altcha: Altcha,
  checkedAltcha?: { answer: CheckedAnswer; marked: boolean | Error | undefined },
): Promise<CheckedAnswer | undefined> {
  const provider = key.captcha;
  const field = CAPTCHA_FIELDS[provider];
  const answer = fields.find(([name]) => name === field)?.[1];
  if (provider === 'altcha') {
    const checked = checkedAltcha?.answer ?? altcha.check(answer);
    await altcha.verify(key.id, checked, checkedAltcha?.marked);
    return checked;
  }
  if (typeof answer !== 'string' || answer.trim() === '') {
    throw errors.invalidFields({ [field]: ['Complete the captcha.'] }, 'Captcha required.');
  }
  const failed = () => errors.invalidFields({ [field]: ['Captcha verification failed.'] }, 'Captcha verification failed.');
  if (answer.length > PROVIDER_ANSWER_MAX_CHARS) throw failed();
  const [secret, verifyUrl] =
    provider === 'hcaptcha' ? [config.HCAPTCHA_SECRET, config.HCAPTCHA_VERIFY_URL] : [config.TURNSTILE_SECRET, config.TURNSTILE_VERIFY_URL];
  if (!secret) throw new Error(`the key requires ${provider} but its secret is not configured`);

  let verdict: { success?: unknown };
  try {
    const response = await fetch(verifyUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ secret, response: answer, remoteip: clientIp }),
      signal: AbortSignal.timeout(VERIFY_TIMEOUT_MS),
    });
    verdict = (await response.json()) as { success?: unknown };
  } catch {
    throw errors.captchaUnavailable();
  }
  if (verdict.success !== true) throw failed();
  return undefined;
}
