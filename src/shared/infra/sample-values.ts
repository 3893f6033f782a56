// The secret values this project publishes as samples: the placeholders of docker-compose.yml, of
// deploy/kubernetes and of the docs. Anyone can read them, so a process refuses to start with one
// (config.ts): an installation that forgot to replace them would run with a SECRET, a token or a
// password the world knows.

/** Settings whose whole value is a secret. */
export const SECRET_SETTINGS = [
  'SECRET',
  'ADMIN_TOKEN',
  'SPAM_FILTER_PASSWORD',
  'REDIS_SENTINEL_PASSWORD',
  'S3_SECRET_ACCESS_KEY',
  'HCAPTCHA_SECRET',
  'TURNSTILE_SECRET',
] as const;

/** Settings that are URLs whose password part is a secret. */
export const URL_PASSWORD_SETTINGS = ['DATABASE_URL', 'DATABASE_DIRECT_URL', 'REDIS_URL', 'SMTP_URL'] as const;

/** Every sample value published in the repository (compared case-insensitively, trimmed). */
export const PUBLISHED_SAMPLE_VALUES: ReadonlySet<string> = new Set([
  // docker-compose.yml's former defaults and deploy/kubernetes's former secret.env files.
  'change-me',
  'change-me-to-a-random-secret-of-32-chars-or-more',
  'change-me-to-a-long-random-token',
  'change-me-spam-filter-password',
  'contact-form-password',
  'contact-form-minio-secret',
  'trial-postgres-password',
  'trial-redis-password',
  'trial-minio-password',
  // docs/configuration.md and docs/deploying.md write URLs as user:pass@host.
  'pass',
  'password',
  // rspamd's stock controller password (docs/spam.md).
  'q1',
]);

/**
 * The local PostgreSQL of `npm start` (README.md shows its URL) has the password `postgres` and
 * listens on loopback only, where no one else reaches it: that one is refused only on another host.
 */
const LOOPBACK_ONLY_SAMPLES: ReadonlySet<string> = new Set(['postgres']);

const isLoopback = (hostname: string) => hostname === 'localhost' || hostname === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(hostname);

const isSample = (value: string) => PUBLISHED_SAMPLE_VALUES.has(value.trim().toLowerCase());

/** The settings of `env` (already valid) that hold a published sample value, each with why. */
export function sampleValueIssues(env: Readonly<Record<string, unknown>>): string[] {
  const issues: string[] = [];
  for (const name of SECRET_SETTINGS) {
    const value = env[name];
    if (typeof value === 'string' && isSample(value))
      issues.push(`${name}: is a sample value published with this project; set your own (e.g. openssl rand -base64 32)`);
  }
  for (const name of URL_PASSWORD_SETTINGS) {
    const value = env[name];
    if (typeof value !== 'string') continue;
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      continue;
    }
    const password = decodeURIComponent(url.password).trim().toLowerCase();
    if (password === '') continue;
    if (isSample(password) || (LOOPBACK_ONLY_SAMPLES.has(password) && !isLoopback(url.hostname)))
      issues.push(`${name}: its password is a sample value published with this project; set your own`);
  }
  return issues;
}
