// Every environment variable the service reads, validated once at start.
// A bad value stops the process with a message naming the variable.
// Longer than the 250 lines we aim for, on purpose: the whole configuration in one schema, in one
// place, matching the README's table row for row.
import { isIP } from 'node:net';
import * as v from 'valibot';
import { parseAllowList } from './address-guard.ts';

const integer = (fallback: number, min = 0) =>
  v.optional(
    v.pipe(
      v.string(),
      v.trim(),
      v.regex(/^\d+$/, 'must be a whole number'),
      v.transform(Number),
      v.minValue(min, `must be at least ${min}`),
    ),
    String(fallback),
  );

const boolean = (fallback: boolean) =>
  v.optional(
    v.pipe(
      v.string(),
      v.trim(),
      v.toLowerCase(),
      v.picklist(['true', 'false', '1', '0', 'yes', 'no'], 'must be true or false'),
      v.transform((value) => value === 'true' || value === '1' || value === 'yes'),
    ),
    String(fallback),
  );

const url = (protocols: string[]) =>
  v.pipe(
    v.string(),
    v.trim(),
    v.url('must be a URL'),
    v.check(
      (value) => !URL.canParse(value) || protocols.includes(new URL(value).protocol),
      `must start with ${protocols.map((p) => `${p}//`).join(' or ')}`,
    ),
  );

const optionalText = v.optional(v.pipe(v.string(), v.trim(), v.minLength(1, 'must not be empty')));

/** Which proxies' X-Forwarded-For to believe: a hop count, or addresses and CIDR ranges. */
export type TrustProxy = { hops: number } | { ranges: string[] };

const CIDR = /^(?<address>[0-9a-fA-F:.]+)(?:\/(?<prefix>\d{1,3}))?$/;
const isAddressOrRange = (entry: string) => {
  const match = CIDR.exec(entry);
  const address = match?.groups?.address ?? '';
  const family = isIP(address);
  const prefix = match?.groups?.prefix === undefined ? undefined : Number(match.groups.prefix);
  return family !== 0 && (prefix === undefined || prefix <= (family === 4 ? 32 : 128));
};

const trustProxy = v.optional(
  v.pipe(
    v.string(),
    v.trim(),
    v.minLength(1),
    v.check(
      (value) => /^\d+$/.test(value) || value.split(',').every((entry) => isAddressOrRange(entry.trim())),
      'must be a hop count or a comma-separated list of addresses and CIDR ranges',
    ),
    v.transform((value): TrustProxy =>
      /^\d+$/.test(value) ? { hops: Number(value) } : { ranges: value.split(',').map((entry) => entry.trim()) },
    ),
  ),
);

const EnvSchema = v.object({
  PORT: integer(3000),
  HOST: v.optional(v.pipe(v.string(), v.trim(), v.minLength(1)), '0.0.0.0'),
  PUBLIC_URL: v.optional(url(['http:', 'https:'])),
  DATABASE_URL: url(['postgres:', 'postgresql:']),
  REDIS_URL: url(['redis:', 'rediss:']),
  S3_ENDPOINT: v.optional(url(['http:', 'https:'])),
  S3_REGION: v.optional(v.pipe(v.string(), v.trim(), v.minLength(1)), 'us-east-1'),
  S3_BUCKET: v.optional(
    v.pipe(v.string(), v.trim(), v.regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, 'must be a valid bucket name')),
    'contact-form-files',
  ),
  S3_ACCESS_KEY_ID: optionalText,
  S3_SECRET_ACCESS_KEY: optionalText,
  S3_FORCE_PATH_STYLE: boolean(true),
  SMTP_URL: url(['smtp:', 'smtps:']),
  MAIL_FROM: v.optional(
    v.pipe(v.string(), v.trim(), v.regex(/^[^\r\n]+$/, 'must be one line'), v.minLength(3)),
    'Contact Form <no-reply@localhost>',
  ),
  ADMIN_TOKEN: v.optional(v.pipe(v.string(), v.trim(), v.minLength(16, 'must be at least 16 characters'))),
  TRUST_PROXY: trustProxy,
  WORKER_CONCURRENCY: integer(50, 1),
  /** Unset: no limit, temporary failures are retried until EMAIL_RETRY_HORIZON_MS. */
  EMAIL_MAX_ATTEMPTS: v.optional(v.pipe(v.string(), v.trim(), v.regex(/^\d+$/, 'must be a whole number'), v.transform(Number), v.minValue(1, 'must be at least 1'))),
  EMAIL_RETRY_BACKOFF_MS: integer(30_000, 0),
  EMAIL_RETRY_MAX_BACKOFF_MS: integer(3_600_000, 0),
  /** Age of a row after which a temporary failure makes it `failed` (5 days, as Postfix's maximal_queue_lifetime). */
  EMAIL_RETRY_HORIZON_MS: integer(5 * 24 * 3_600_000, 1_000),
  SMTP_BREAKER_THRESHOLD: integer(5, 1),
  SMTP_PROBE_INTERVAL_MS: integer(30_000, 100),
  DATA_DIR: v.optional(v.pipe(v.string(), v.trim(), v.minLength(1)), '.data'),
  LOG_LEVEL: v.optional(v.picklist(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']), 'info'),
  QUEUE_PREFIX: v.optional(
    v.pipe(v.string(), v.regex(/^\{[A-Za-z0-9:_-]+\}$/, 'must be a Redis hash tag such as {cfs}')),
    '{cfs}',
  ),
  SHUTDOWN_TIMEOUT_MS: integer(30_000, 0),
  RATE_LIMIT_WINDOW_MS: integer(3_000, 1),
  RATE_LIMIT_MAX: integer(1, 1),
  // One IPv6 subscriber usually holds a whole /64: the limiter counts per prefix of this length.
  RATE_LIMIT_IPV6_PREFIX: v.optional(
    v.pipe(v.string(), v.trim(), v.regex(/^\d+$/, 'must be a whole number'), v.transform(Number), v.minValue(1, 'must be at least 1'), v.maxValue(128, 'must be at most 128')),
    '64',
  ),
  ATTACH_MAX_BYTES: integer(10 * 1024 * 1024, 0),
  UPLOAD_CONCURRENCY: integer(3, 1),
  BODY_IDLE_TIMEOUT_MS: integer(20_000, 100),
  BODY_MIN_BYTES_PER_SECOND: integer(100, 0),
  HTTP_HEADERS_TIMEOUT_MS: integer(20_000, 100),
  HTTP_REQUEST_TIMEOUT_MS: integer(300_000, 0),
  HTTP_KEEP_ALIVE_TIMEOUT_MS: integer(65_000, 0),
  CONNECTIONS_PER_IP: integer(100, 0),
  LINK_TTL_SECONDS: v.optional(
    v.pipe(v.string(), v.regex(/^\d+$/, 'must be a whole number'), v.transform(Number), v.minValue(60), v.maxValue(604_800, 'must be at most 604800 (7 days, the limit of S3 presigned URLs)')),
    '604800',
  ),
  S3_PUBLIC_ENDPOINT: v.optional(url(['http:', 'https:'])),
  EMAIL_STATUS_WAIT_MS: integer(0, 0),
  RECONCILE_INTERVAL_MS: integer(30_000, 100),
  RECONCILE_AFTER_MS: integer(30_000, 0),
  SECRET: v.pipe(
    v.string(),
    v.trim(),
    v.minLength(32, 'must be at least 32 characters (e.g. `openssl rand -base64 32`)'),
  ),
  // Per mailbox (lower-cased, +tag removed): room for the spec's 10 keys plus a few getKeys.
  KEY_EMAILS_PER_HOUR: integer(15, 1),
  // Recipient consent (src/shared/consent.ts): submission emails per clock hour to a mailbox that
  // has not confirmed; past that they are held until it confirms, and expire after HELD_TTL_DAYS.
  UNCONFIRMED_EMAILS_PER_HOUR: integer(20, 1),
  HELD_TTL_DAYS: integer(7, 1),
  // Skipped submissions (not_email_sent) of unconfirmed mailboxes, and their files, go after this.
  UNCONFIRMED_SKIPPED_TTL_DAYS: integer(30, 1),
  KEY_STORAGE_QUOTA_MB: integer(1024, 1),
  // Active keys are cached per API process (src/api/submissions/key-cache.ts); changes are notified
  // at once, and this bounds how long an entry lives should a notification be lost (0: no cache).
  KEY_CACHE_TTL_MS: integer(2_000, 0),
  HONEYPOT_FIELD: v.optional(v.pipe(v.string(), v.trim(), v.regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be a plain field name')), 'botcheck'),
  HCAPTCHA_SECRET: optionalText,
  HCAPTCHA_VERIFY_URL: v.optional(url(['http:', 'https:']), 'https://api.hcaptcha.com/siteverify'),
  TURNSTILE_SECRET: optionalText,
  TURNSTILE_VERIFY_URL: v.optional(url(['http:', 'https:']), 'https://challenges.cloudflare.com/turnstile/v0/siteverify'),
  REDIS_CLUSTER: boolean(false),
  RETENTION_DAYS: v.optional(v.pipe(v.string(), v.regex(/^\d+$/, 'must be a whole number of days'), v.transform(Number), v.minValue(1))),
  RETENTION_INTERVAL_MS: integer(3_600_000, 100),
  METRICS_PORT: v.optional(v.pipe(v.string(), v.regex(/^\d+$/, 'must be a port number'), v.transform(Number), v.maxValue(65_535))),
  JOB_LOCK_MS: integer(30_000, 1_000),
  CLAIM_LEASE_MS: integer(5 * 60_000, 1_000),
  // Webhooks (src/shared/webhooks.ts, src/workers/webhook-*.ts).
  WEBHOOK_CONCURRENCY: integer(10, 1),
  WEBHOOK_TIMEOUT_MS: integer(10_000, 100),
  WEBHOOK_RETRY_BACKOFF_MS: integer(30_000, 1),
  WEBHOOK_RETRY_MAX_BACKOFF_MS: integer(3_600_000, 1),
  WEBHOOK_RETRY_HORIZON_MS: integer(24 * 3_600_000, 0),
  WEBHOOK_DISABLE_AFTER: integer(20, 1),
  // Hosts (exact names) and address ranges (CIDR or single addresses) that webhooks may reach
  // although they are private, loopback, link-local…: an intranet, the tests. Comma-separated.
  WEBHOOK_ALLOW: v.optional(
    v.pipe(
      v.string(),
      v.transform((list) => list.split(',').map((item) => item.trim()).filter(Boolean)),
      v.check(isAllowList, 'must list host names, addresses or CIDR ranges, comma-separated'),
    ),
    '',
  ),
  DKIM_DOMAIN: optionalText,
  DKIM_SELECTOR: optionalText,
  DKIM_PRIVATE_KEY: optionalText,
});

function isAllowList(entries: string[]): boolean {
  try {
    parseAllowList(entries);
    return true;
  } catch {
    return false;
  }
}

type Env = v.InferOutput<typeof EnvSchema>;

export type Config = Env & { PUBLIC_URL: string };

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Reads and validates the environment; throws a ConfigError naming every bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = parseEnv(EnvSchema, env) as Env;
  const dkim = [parsed.DKIM_DOMAIN, parsed.DKIM_SELECTOR, parsed.DKIM_PRIVATE_KEY];
  if (dkim.some(Boolean) && !dkim.every(Boolean)) {
    throw new ConfigError('Invalid configuration:\n  DKIM_DOMAIN, DKIM_SELECTOR, DKIM_PRIVATE_KEY: set all three or none');
  }
  if (parsed.METRICS_PORT !== undefined && parsed.ADMIN_TOKEN === undefined) {
    throw new ConfigError('Invalid configuration:\n  METRICS_PORT: needs ADMIN_TOKEN (a worker serves its metrics only with that token)');
  }
  if (parsed.HTTP_REQUEST_TIMEOUT_MS > 0 && parsed.HTTP_HEADERS_TIMEOUT_MS > parsed.HTTP_REQUEST_TIMEOUT_MS) {
    throw new ConfigError('Invalid configuration:\n  HTTP_HEADERS_TIMEOUT_MS: must not exceed HTTP_REQUEST_TIMEOUT_MS');
  }
  const host = parsed.HOST === '0.0.0.0' || parsed.HOST === '::' ? 'localhost' : parsed.HOST;
  return { ...parsed, PUBLIC_URL: (parsed.PUBLIC_URL ?? `http://${host}:${parsed.PORT}`).replace(/\/+$/, '') };
}

/** For tools that need a few variables only (the migration CLI needs just DATABASE_URL). */
export function loadConfigSubset<const K extends keyof Env>(names: K[], env: NodeJS.ProcessEnv = process.env): Pick<Env, K> {
  const schema = v.pick(EnvSchema, names as [K, ...K[]]) as unknown as v.GenericSchema<Record<string, string>, unknown>;
  return parseEnv(schema, env) as Pick<Env, K>;
}

function parseEnv(schema: v.GenericSchema<Record<string, string>, unknown>, env: NodeJS.ProcessEnv): unknown {
  // Treat empty strings as unset, as shells and compose files often export them.
  const present = Object.fromEntries(
    Object.entries(env).filter(([name, value]) => name in EnvSchema.entries && value !== undefined && value !== ''),
  );
  const result = v.safeParse(schema, present);
  if (!result.success) {
    const lines = result.issues.map((issue) => {
      const name = issue.path?.map((item) => String(item.key)).join('.') ?? '(environment)';
      const reason = issue.kind === 'schema' && issue.received === 'undefined' ? 'is required' : issue.message;
      return `  ${name}: ${reason}`;
    });
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  return result.output;
}

/** For process entry points: a bad configuration ends the process with the message, not a stack trace. */
export function loadConfigOrExit(env: NodeJS.ProcessEnv = process.env): Config {
  return exitOnConfigError(() => loadConfig(env));
}

export function exitOnConfigError<T>(load: () => T): T {
  try {
    return load();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(78); // EX_CONFIG
    }
    throw error;
  }
}
