// Every environment variable the service reads: its validation, default, type and description.
// Past 250 lines on purpose: the whole configuration is one list in one
// place, and docs/configuration.md is generated from it (npm run docs:config), so the schema and
// its documentation cannot drift apart.
import { isIP } from 'node:net';
import * as v from 'valibot';
import { parseAllowList } from './address-list.ts';

/** How the documentation names a setting's kind of value; read back with v.getMetadata. */
const kind = <TInput>(type: string) => v.metadata<TInput, { type: string }>({ type });

/** A setting's documentation line. */
const about = <S extends v.GenericSchema>(schema: S, description: string) => v.pipe(schema, v.description<v.InferOutput<S>, string>(description));

const wholeNumber = (min: number, max?: number) =>
  v.pipe(
    v.string(),
    v.trim(),
    v.regex(/^\d+$/, 'must be a whole number'),
    v.transform(Number),
    v.minValue(min, `must be at least ${min}`),
    v.check((value) => max === undefined || value <= max, `must be at most ${max}`),
    kind(max === undefined ? `integer ≥ ${min}` : `integer ${min}–${max}`),
  );

const integer = (fallback: number, min = 0) => v.optional(wholeNumber(min), String(fallback));

const boolean = (fallback: boolean) =>
  v.optional(
    v.pipe(
      v.string(),
      v.trim(),
      v.toLowerCase(),
      v.picklist(['true', 'false', '1', '0', 'yes', 'no'], 'must be true or false'),
      v.transform((value) => value === 'true' || value === '1' || value === 'yes'),
      kind('boolean'),
    ),
    String(fallback),
  );

const url = (protocols: string[]) =>
  v.pipe(
    v.string(),
    v.trim(),
    v.url('must be a URL'),
    v.check((value) => !URL.canParse(value) || protocols.includes(new URL(value).protocol), `must start with ${protocols.map((p) => `${p}//`).join(' or ')}`),
    kind(`URL (${protocols.map((p) => `${p}//`).join(', ')})`),
  );

/** Chosen by measurement: a median solve of 0.3–1 s in headless Chromium, quiet machine or busy (docs/spam.md). */
const ALTCHA_MAX_COUNTER_DEFAULT = 3_500;

/** The longest socket path Linux takes (sun_path holds 108 bytes with the final NUL). */
/** An optional comma-separated list, its entries trimmed and each one passing `valid`. */
const commaList = (valid: (entry: string) => boolean, message: string, type: string) =>
  v.optional(
    v.pipe(
      v.string(),
      v.trim(),
      v.minLength(1),
      v.transform((value) =>
        value
          .split(',')
          .map((entry) => entry.trim())
          .filter(Boolean),
      ),
      v.check((entries) => entries.length > 0 && entries.every(valid), message),
      kind(type),
    ),
  );

/** `host:port`, the host a name or an IPv4 address, or `[v6]:port`. */
function isHostPort(entry: string): boolean {
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([A-Za-z0-9.-]+)):(\d{1,5})$/.exec(entry);
  return match !== null && Number(match[3]) >= 1 && Number(match[3]) <= 65_535;
}

export const MAX_SOCKET_PATH_BYTES = 107;

/** A percent-encoded text decoded; undefined when an escape is malformed (`%zz`). */
function decodedOrUndefined(text: string): string | undefined {
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
}

/** rspamd's address: an http(s) URL, or `unix:/absolute/path` for a Unix socket of this host. */
const rspamdUrl = () =>
  v.pipe(
    v.string(),
    v.trim(),
    v.url('must be a URL'),
    v.check((value) => !URL.canParse(value) || ['http:', 'https:', 'unix:'].includes(new URL(value).protocol), 'must start with http://, https:// or unix:/'),
    v.check((value) => {
      if (!URL.canParse(value)) return true;
      const { protocol, host, pathname } = new URL(value);
      if (protocol !== 'unix:') return true;
      const socketPath = decodedOrUndefined(pathname);
      return host === '' && socketPath !== undefined && socketPath.startsWith('/') && Buffer.byteLength(socketPath) <= MAX_SOCKET_PATH_BYTES;
    }, `unix: takes a socket's absolute path of at most ${MAX_SOCKET_PATH_BYTES} bytes (unix:/run/rspamd/normal.sock)`),
    kind('URL (http://, https://, unix:/path)'),
  );

const text = <const D extends string | undefined = undefined>(fallback?: D) =>
  v.optional(v.pipe(v.string(), v.trim(), v.minLength(1, 'must not be empty'), kind('text')), fallback as D);

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
    v.transform((value): TrustProxy => (/^\d+$/.test(value) ? { hops: Number(value) } : { ranges: value.split(',').map((entry) => entry.trim()) })),
    kind('hop count, or addresses and CIDR ranges'),
  ),
);

function isAllowList(entries: string[]): boolean {
  try {
    parseAllowList(entries);
    return true;
  } catch {
    return false;
  }
}

const server = {
  PORT: about(integer(3000), 'API port.'),
  HOST: about(text('0.0.0.0'), 'API bind address.'),
  PUBLIC_URL: about(v.optional(url(['http:', 'https:'])), 'The address the service is reached at, used in emails and pages. Unset: `http://localhost:$PORT`.'),
  TRUST_PROXY: about(
    trustProxy,
    "Proxies whose `X-Forwarded-For` is trusted: a hop count (`1`) or addresses and CIDR ranges (`10.0.0.0/8,192.168.1.5`). Unset: the client IP is the socket's address.",
  ),
  HTTP_HEADERS_TIMEOUT_MS: about(integer(20_000, 100), "Time a client has to send a request's headers (then 408 and the connection closes)."),
  HTTP_REQUEST_TIMEOUT_MS: about(integer(300_000, 0), 'Time a client has to send a whole request, body included (`0`: none).'),
  HTTP_KEEP_ALIVE_TIMEOUT_MS: about(
    integer(65_000, 0),
    "An idle keep-alive connection is closed after this; keep it above your load balancer's idle timeout (60 s on AWS ALB).",
  ),
  CONNECTIONS_PER_IP: about(
    integer(100, 0),
    "Open connections per socket address (IPv6: per `RATE_LIMIT_IPV6_PREFIX` network); the next one is closed at once (`0`: no cap). Behind a proxy this counts the proxy's connections: raise it above the proxy's pool, or cap per client at the proxy.",
  ),
  BODY_IDLE_TIMEOUT_MS: about(
    integer(20_000, 100),
    'A request body that brings less than `BODY_MIN_BYTES_PER_SECOND` × this while the API waits for it is cut off: connection closed, stored files deleted, nothing saved. Time the API itself is not reading does not count.',
  ),
  BODY_MIN_BYTES_PER_SECOND: about(
    integer(100, 0),
    'The slowest body accepted, averaged over each `BODY_IDLE_TIMEOUT_MS` (`0`: only a body that sends nothing at all is cut off).',
  ),
  UPLOAD_CONCURRENCY: about(
    integer(3, 1),
    'File uploads past their first 256 KB in flight at once per API process (each holds a 5 MB part); others wait, pacing their clients. First 256 KB are read under 32 further small slots (8 MB in all).',
  ),
  SHUTDOWN_TIMEOUT_MS: about(integer(30_000, 0), 'How long a stopping process waits for its active work.'),
  LOG_LEVEL: about(
    v.optional(
      v.pipe(v.picklist(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']), kind('fatal, error, warn, info, debug, trace or silent')),
      'info',
    ),
    'Log level of the JSON log lines on stdout.',
  ),
};

const services = {
  DATABASE_URL: about(
    url(['postgres:', 'postgresql:']),
    'PostgreSQL, `postgres://user:pass@host:port/db`, or a connection pooler in front of it (`DATABASE_POOLER`). `npm start` starts a local one when unset.',
  ),
  DATABASE_POOLER: about(
    v.optional(
      v.pipe(v.string(), v.trim(), v.toLowerCase(), v.picklist(['none', 'transaction'], 'must be none or transaction'), kind('none or transaction')),
      'none',
    ),
    '`transaction`: `DATABASE_URL` names a pooler in transaction mode (PgBouncer `pool_mode = transaction`, docs/deploying.md#pgbouncer). No statement is then prepared by name, and no statement bound is sent when a connection opens (PgBouncer refuses startup options): the pooler sets them. Needs `DATABASE_DIRECT_URL`.',
  ),
  DATABASE_DIRECT_URL: about(
    v.optional(url(['postgres:', 'postgresql:'])),
    "PostgreSQL itself, for what needs a session of its own, which a transaction pooler cannot give: the API's `LISTEN` for key changes, migrations and their lock, backups and restores. Unset: `DATABASE_URL`.",
  ),
  PG_STATEMENT_TIMEOUT_MS: about(
    integer(4_000, 100),
    'Longest a statement of the API, the bounce receiver or `npm run admin` may run: PostgreSQL cancels it past this (`statement_timeout`). The API waits 1 s more for an answer, then answers 503. An export is read in pages, each page one statement under this bound.',
  ),
  PG_WORKER_STATEMENT_TIMEOUT_MS: about(
    integer(60_000, 100),
    "Longest a worker's statement may run (housekeeping deletes in batches, each one statement). Migrations, backups and restores have no statement bound: they take as long as the data needs (docs/operations.md).",
  ),
  PG_IDLE_IN_TRANSACTION_TIMEOUT_MS: about(
    integer(30_000, 100),
    'PostgreSQL ends a connection of the API, a worker, the bounce receiver or `npm run admin` that stays this long inside a transaction without a statement (`idle_in_transaction_session_timeout`), so a stuck process holds no locks.',
  ),
  REDIS_URL: about(url(['redis:', 'rediss:']), 'Redis ≥ 6.2 for the queues and the rate limiter. `npm start` starts a local one when unset.'),
  REDIS_CLUSTER: about(boolean(false), '`REDIS_URL` names one node of a Redis Cluster.'),
  REDIS_SENTINELS: about(
    commaList(isHostPort, 'must list host:port pairs, comma-separated (10.0.0.5:26379,10.0.0.6:26379)', 'host:port list'),
    "Redis Sentinels that name the primary of `REDIS_SENTINEL_MASTER`: every process asks them for it and follows a failover. `REDIS_URL` then gives only the primary's user, password and database (its host is not used).",
  ),
  REDIS_SENTINEL_MASTER: about(v.optional(v.pipe(v.string(), v.trim(), v.minLength(1)), 'mymaster'), 'The name the sentinels monitor the primary by.'),
  REDIS_SENTINEL_PASSWORD: about(
    v.optional(v.pipe(v.string(), v.minLength(1))),
    "The sentinels' own password (`requirepass` of sentinel.conf), when they have one.",
  ),
  QUEUE_PREFIX: about(
    v.optional(v.pipe(v.string(), v.regex(/^\{[A-Za-z0-9:_-]+\}$/, 'must be a Redis hash tag such as {cfs}'), kind('Redis hash tag')), '{cfs}'),
    'Prefix of every Redis key; a hash tag, so that the queues work on a Redis Cluster.',
  ),
  S3_ENDPOINT: about(
    v.optional(url(['http:', 'https:'])),
    'S3-compatible endpoint, e.g. `http://minio:9000`. Unset: AWS S3 (`npm start` starts a local server instead).',
  ),
  S3_PUBLIC_ENDPOINT: about(
    v.optional(url(['http:', 'https:'])),
    'The storage address as email recipients reach it; download links are signed for it. Unset: `S3_ENDPOINT`.',
  ),
  S3_REGION: about(text('us-east-1'), 'Region of the bucket.'),
  S3_BUCKET: about(
    v.optional(
      v.pipe(v.string(), v.trim(), v.regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, 'must be a valid bucket name'), kind('bucket name')),
      'contact-form-files',
    ),
    'Bucket for uploaded files; it must exist.',
  ),
  S3_ACCESS_KEY_ID: about(text(), "Access key. Unset: the AWS SDK's default credential chain."),
  S3_SECRET_ACCESS_KEY: about(text(), "Secret key. Unset: the AWS SDK's default credential chain."),
  S3_FORCE_PATH_STYLE: about(boolean(true), 'Path-style bucket URLs (MinIO and most non-AWS servers need them).'),
  SMTP_URL: about(
    v.optional(url(['smtp:', 'smtps:'])),
    'The SMTP relay, `smtp://user:pass@host:port` or `smtps://…`. Required by the workers, the only processes that send (the API and the bounce receiver need not be given its credentials). Each worker connects and logs in once at start, and warns when it cannot. `npm start` starts a local mail catcher when unset.',
  ),
  DATA_DIR: about(text('.data'), "Where `npm start` keeps its local services' data and the generated secret."),
};

/** A TCP port for a local service of `npm start`; unset: a free one is picked at each start. */
const localPort = (service: string) =>
  about(
    v.optional(
      v.pipe(
        v.string(),
        v.trim(),
        v.regex(/^\d+$/, 'must be a port number'),
        v.transform(Number),
        v.minValue(1, 'must be at least 1'),
        v.maxValue(65_535, 'must be at most 65535'),
        kind('port'),
      ),
    ),
    `The loopback port of the ${service} \`npm start\` runs. Unset: a free port, another at each start.`,
  );

/** Read by `npm start` only, and checked free before anything starts. */
const local = {
  LOCAL_POSTGRES_PORT: localPort('PostgreSQL'),
  LOCAL_REDIS_PORT: localPort('Redis (the queues)'),
  LOCAL_S3_PORT: localPort('S3 server'),
  LOCAL_SMTP_PORT: localPort("mail catcher's SMTP server"),
  LOCAL_MAIL_UI_PORT: localPort("mail catcher's web UI"),
  LOCAL_RSPAMD_PORT: localPort("rspamd controller (learning); its scanner is on a Unix socket, or on the next port when the socket's path does not fit"),
};

const operators = {
  SECRET: about(
    v.pipe(v.string(), v.trim(), v.minLength(32, 'must be at least 32 characters (e.g. `openssl rand -base64 32`)'), kind('text, at least 32 characters')),
    'Server secret: stored keys are HMAC-ed and encrypted under it, links and tokens signed. Back it up; it cannot be changed without losing the stored keys, and a process started with another one than the data was written with stops. `npm start` makes one in `DATA_DIR/secret`.',
  ),
  ADMIN_TOKEN: about(
    v.optional(v.pipe(v.string(), v.trim(), v.minLength(16, 'must be at least 16 characters'), kind('text, at least 16 characters'))),
    "Bearer token for `/admin`, the API's `/metrics` and a worker's metrics port. Unset: those routes do not exist (404).",
  ),
  METRICS_PORT: about(
    v.optional(v.pipe(v.string(), v.regex(/^\d+$/, 'must be a port number'), v.transform(Number), v.maxValue(65_535), kind('port'))),
    'A worker serves its Prometheus metrics on this port at `/metrics`, behind `ADMIN_TOKEN` (a worker refuses to start with this but no `ADMIN_TOKEN`). Unset: no metrics server in workers.',
  ),
  OTEL_EXPORTER_OTLP_ENDPOINT: about(
    v.optional(url(['http:', 'https:'])),
    'An OpenTelemetry collector (OTLP/HTTP, e.g. `http://otel-collector:4318`): the API and the workers send their traces to its `/v1/traces` (docs/operations.md#traces). Unset: no tracing, and the OpenTelemetry SDK is not loaded.',
  ),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: about(
    v.optional(url(['http:', 'https:'])),
    'The full URL traces are posted to, in place of `OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/traces`; setting it alone turns tracing on too.',
  ),
  OTEL_SERVICE_NAME: about(text(), 'The service name on the traces. Unset: `contact-form-api` or `contact-form-worker`, by process.'),
};

const email = {
  MAIL_FROM: about(
    v.optional(v.pipe(v.string(), v.trim(), v.regex(/^[^\r\n]+$/, 'must be one line'), v.minLength(3), kind('address')), 'Contact Form <no-reply@localhost>'),
    'From address of every email; its domain names the Message-IDs.',
  ),
  DKIM_DOMAIN: about(text(), 'DKIM signing domain (set all three DKIM variables or none).'),
  DKIM_SELECTOR: about(text(), 'DKIM selector.'),
  DKIM_PRIVATE_KEY: about(text(), 'DKIM private key, PEM (`\\n` stands for a newline).'),
  ATTACH_MAX_BYTES: about(
    integer(10 * 1024 * 1024, 0),
    'Files are attached to the email while their total is at most this; past it they become download links.',
  ),
  LINK_TTL_SECONDS: about(
    v.optional(
      v.pipe(
        v.string(),
        v.regex(/^\d+$/, 'must be a whole number'),
        v.transform(Number),
        v.minValue(60),
        v.maxValue(604_800, 'must be at most 604800 (7 days, the limit of S3 presigned URLs)'),
        kind('integer 60–604800'),
      ),
      '604800',
    ),
    'Validity of the presigned download links in emails and webhooks (at most 7 days).',
  ),
};

const delivery = {
  WORKER_CONCURRENCY: about(integer(50, 1), 'Email deliveries one worker process makes at a time.'),
  WORKER_STALL_MS: about(
    integer(120_000, 1_000),
    "A worker's `/livez` (on `METRICS_PORT`) answers 503 when email or webhook jobs wait and it has started or finished none for this long.",
  ),
  EMAIL_RETRY_HORIZON_MS: about(
    integer(5 * 24 * 3_600_000, 1_000),
    'Temporary failures (4xx, refused or dropped connections, timeouts) are retried until the row is this old, counted from its last re-send; the next one makes it `failed`. The default is 5 days, as a mail server keeps a message.',
  ),
  EMAIL_RETRY_BACKOFF_MS: about(integer(30_000, 0), 'First retry delay; it doubles per attempt, with jitter (50–100 % of the delay).'),
  EMAIL_RETRY_MAX_BACKOFF_MS: about(integer(3_600_000, 0), 'The retry delay grows to this and never beyond.'),
  EMAIL_MAX_ATTEMPTS: about(v.optional(wholeNumber(1)), 'When set, a row is also `failed` after this many attempts, even before the horizon. Unset: no limit.'),
  SMTP_BREAKER_THRESHOLD: about(
    integer(5, 1),
    'Consecutive temporary SMTP failures (of two messages at least) in one worker that open the circuit breaker for every worker.',
  ),
  SMTP_PROBE_INTERVAL_MS: about(integer(30_000, 100), 'While the breaker is open, one delivery tries the SMTP server this often; the others wait.'),
  // 10 a second: under the sending rate of the stricter relays (a new Amazon SES account out of the
  // sandbox typically gets 14), so a flush alone does not make a relay that just came back throttle
  // again, while 1,000 waiting emails are out in under 2 minutes and 10,000 in 17, sooner than their
  // hourly retry timers.
  RETRY_FLUSH_PER_SECOND: about(
    v.optional(wholeNumber(1, 10_000), '10'),
    'When the circuit breaker closes, or an operator flushes, the emails waiting on a retry timer are tried now, at most this many a second.',
  ),
  EMAIL_STATUS_WAIT_MS: about(integer(0, 0), 'When above 0, a submission waits up to this long for its delivery and answers its final status.'),
  // 5 s of age and a run every 10 s: a delivery whose job was lost (Redis down at intake) is enqueued
  // within about 15 s of Redis's return, which keeps the webhooks' 20 s (docs/webhooks.md). The
  // age is past the API's 2 s enqueue bound, so a job still being added is not raced for nothing.
  RECONCILE_INTERVAL_MS: about(integer(10_000, 100), 'How often the reconciler looks for accepted rows without a job.'),
  RECONCILE_AFTER_MS: about(
    integer(5_000, 0),
    "Age after which a `queued` or `retrying` row without a job is enqueued again, and a queued submission's webhook delivery that no worker wrote is; also how long after its owner's email was sent a submission without its copies and autoresponse (a previous release's worker sent it) gets them.",
  ),
  CLAIM_LEASE_MS: about(integer(5 * 60_000, 1_000), "Age after which a `sending` claim is taken to be a dead worker's and the row is delivered again."),
  JOB_LOCK_MS: about(integer(30_000, 1_000), "BullMQ job lock, for deliveries and housekeeping; a dead worker's jobs run again after about this long."),
};

const abuse = {
  RATE_LIMIT_WINDOW_MS: about(
    integer(3_000, 1),
    'Rate-limit window per client IP. One count covers every public POST that can send mail or create something: POST / (keys), POST /api/contact-api/, POST /confirm and POST /owner/sign-in. GET /api/contact-api/altcha-challenge is counted apart, with the same window and `RATE_LIMIT_MAX`.',
  ),
  RATE_LIMIT_MAX: about(integer(1, 1), 'Requests allowed per window per client IP.'),
  // Using a sign-in link sends nothing: an owner who has just tried their own form, or who shares
  // an office's address with it, must still be able to sign in.
  SIGN_IN_LINK_USES_PER_MINUTE: about(
    integer(10, 1),
    'Sign-in links used (POST /owner/link, POST /owner/api/session) per client IP per minute, counted apart from `RATE_LIMIT_MAX`.',
  ),
  // One IPv6 subscriber usually holds a whole /64: the limiter counts per prefix of this length.
  RATE_LIMIT_IPV6_PREFIX: about(v.optional(wholeNumber(1, 128), '64'), 'IPv6 clients are counted per network prefix of this length; IPv4 clients per address.'),
  KEY_EMAILS_PER_HOUR: about(
    integer(15, 1),
    'Key emails POST / may send to one mailbox per hour (a mailbox is the address lower-cased without its `+tag`, and at Gmail without dots); past it 429.',
  ),
  SIGN_IN_EMAILS_PER_HOUR: about(
    integer(5, 1),
    "Console sign-in links sent to one mailbox per hour, apart from `KEY_EMAILS_PER_HOUR`, so that others' key requests cannot spend them; past it no link is sent (the answer is the same).",
  ),
  UNCONFIRMED_EMAILS_PER_HOUR: about(
    integer(20, 1),
    'Submission emails per clock hour to a mailbox that has not confirmed it wants them; past that they are `held` until it confirms.',
  ),
  HELD_TTL_DAYS: about(
    integer(7, 1),
    'Held submissions whose mailbox never confirmed are deleted, with their files, after this many days; so are the copies held for an address added to a key that never confirmed.',
  ),
  UNCONFIRMED_SKIPPED_TTL_DAYS: about(
    integer(30, 1),
    'Skipped (`not_email_sent`) submissions of unconfirmed mailboxes are deleted, with their files, after this many days.',
  ),
  OWNER_SEARCHES_PER_SESSION: about(
    integer(2, 1),
    'Searches (lists with `q`) one owner session may run at a time in one API process; past it 429 with Retry-After.',
  ),
  OWNER_EXPORTS_PER_SESSION: about(integer(1, 1), 'CSV downloads one owner session may run at a time in one API process; past it 429 with Retry-After.'),
  EXPORTS_PER_PROCESS: about(integer(2, 1), 'CSV downloads (owners and `/admin`) one API process runs at a time, whoever asks; past it 429 with Retry-After.'),
  KEY_STORAGE_QUOTA_MB: about(integer(1024, 1), 'Megabytes of files one key may keep stored; past it a submission with files gets 413.'),
  // Changes to keys are notified to every API process at once; this bounds an entry's life should a
  // notification be lost.
  KEY_CACHE_TTL_MS: about(
    integer(2_000, 0),
    'Each API process keeps the active keys it used in memory; every change is notified at commit, and an entry is read again after this long at the latest (`0`: no cache). A value that matched no key is remembered as unknown for this long too, at most 5 s.',
  ),
  AUTORESPONSES: about(
    v.optional(
      v.pipe(v.string(), v.trim(), v.toLowerCase(), v.picklist(['on', 'approval', 'off'], 'must be on, approval or off'), kind('on, approval or off')),
      'on',
    ),
    'Owners\' autoresponses (the confirmation email to each visitor). `on`: every key may send them, within their bounds. `approval`: only keys whose autoresponse the operator approved (`PATCH /admin/keys/:key {"autoresponse_review": "approved"}`). `off`: none.',
  ),
  AUTORESPONSES_NEW_KEY_PER_DAY: about(
    integer(20, 1),
    "Autoresponses a key sends in 24 hours during its first week. The bound doubles each week of the key's age up to `AUTORESPONSES_KEY_PER_DAY`; an owner's keys together send at most twice their oldest key's bound.",
  ),
  AUTORESPONSES_KEY_PER_DAY: about(
    integer(200, 1),
    'The most autoresponses one key sends in 24 hours, however old; a key whose autoresponse the operator approved has it from its first day.',
  ),
  HONEYPOT_FIELD: about(
    v.optional(v.pipe(v.string(), v.trim(), v.regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be a plain field name'), kind('field name')), 'botcheck'),
    'A filled field of this name marks a bot: answered as accepted, nothing kept. So does a filled `_gotcha`, `_honeypot`, `_honey` or `botcheck`, the honeypots of the form services whose forms this one takes.',
  ),
  HCAPTCHA_SECRET: about(text(), 'hCaptcha secret, for keys with `captcha: "hcaptcha"`.'),
  HCAPTCHA_VERIFY_URL: about(v.optional(url(['http:', 'https:']), 'https://api.hcaptcha.com/siteverify'), 'hCaptcha verification endpoint.'),
  TURNSTILE_SECRET: about(text(), 'Cloudflare Turnstile secret, for keys with `captcha: "turnstile"`.'),
  TURNSTILE_VERIFY_URL: about(
    v.optional(url(['http:', 'https:']), 'https://challenges.cloudflare.com/turnstile/v0/siteverify'),
    'Turnstile verification endpoint.',
  ),
  ALTCHA_MAX_COUNTER: about(
    integer(ALTCHA_MAX_COUNTER_DEFAULT, 10),
    'Difficulty of the ALTCHA challenges, for keys with `captcha: "altcha"`: a browser tries from half this many to this many PBKDF2 keys (1,000 iterations each) to solve one (docs/spam.md).',
  ),
};

const retention = {
  RETENTION_DAYS: about(
    v.optional(v.pipe(v.string(), v.regex(/^\d+$/, 'must be a whole number of days'), v.transform(Number), v.minValue(1), kind('integer ≥ 1'))),
    'Delete sent, failed and skipped submissions older than this many days, with their files. Unset: keep them.',
  ),
  RETENTION_INTERVAL_MS: about(
    integer(3_600_000, 100),
    'How often the retention job runs (always: it also expires held submissions, old sign-in links and spam campaign votes).',
  ),
};

const webhooks = {
  WEBHOOK_CONCURRENCY: about(integer(10, 1), 'Webhook deliveries one worker process makes at a time (their own queue, apart from the emails).'),
  WEBHOOK_TIMEOUT_MS: about(
    integer(10_000, 100),
    'A receiver must answer within this (connect, send, answer); after it the attempt counts as a network error.',
  ),
  WEBHOOK_RETRY_BACKOFF_MS: about(
    integer(30_000, 1),
    "First retry delay of a webhook, doubling per attempt, shortened by a random 0–50 %; a receiver's `Retry-After` is honoured.",
  ),
  WEBHOOK_RETRY_MAX_BACKOFF_MS: about(integer(3_600_000, 1), 'The webhook retry delay grows to this and never beyond.'),
  WEBHOOK_RETRY_HORIZON_MS: about(
    integer(24 * 3_600_000, 0),
    'Retryable webhook failures (408, 429, 5xx, network, timeout) are retried until the delivery is this old, counted from its last re-send.',
  ),
  WEBHOOK_DISABLE_AFTER: about(integer(20, 1), 'An endpoint whose deliveries end `failed` this many times in a row is disabled, and its owner emailed once.'),
  // An intranet receiver, or the tests: these may be reached although private, loopback, link-local…
  WEBHOOK_ALLOW: about(
    v.optional(
      v.pipe(
        v.string(),
        v.transform((list) =>
          list
            .split(',')
            .map((item) => item.trim())
            .filter(Boolean),
        ),
        v.check(isAllowList, 'must list host names, addresses or CIDR ranges, comma-separated'),
        kind('host names, addresses or CIDR ranges'),
      ),
      '',
    ),
    'Comma-separated hosts or ranges that webhooks may reach although private, loopback or link-local. Unset: public unicast addresses only.',
  ),
  TELEGRAM_API_URL: about(
    v.optional(url(['https:', 'http:']), 'https://api.telegram.org'),
    'The Telegram Bot API that Telegram chat channels call (`<this>/bot<token>/sendMessage`): a self-hosted Bot API server, or a stand-in in tests. Reached through the same address guard as webhooks (`WEBHOOK_ALLOW`).',
  ),
};

const domainName = v.pipe(
  v.string(),
  v.trim(),
  v.toLowerCase(),
  v.regex(/^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z][a-z0-9-]{0,61}[a-z0-9]$/, 'must be a domain name, e.g. bounces.example.com'),
  kind('domain name'),
);

const bounces = {
  BOUNCE_DOMAIN: about(
    v.optional(domainName),
    'Each email gets a return path of its own at this domain (VERP), and the bounce receiver takes the bounces and complaints sent there. Its MX must point at the receiver. Unset: the return path is `MAIL_FROM`, and no bounce comes back.',
  ),
  BOUNCE_SMTP_HOST: about(text('0.0.0.0'), 'Address the bounce receiver listens on.'),
  BOUNCE_SMTP_PORT: about(
    v.optional(v.pipe(v.string(), v.regex(/^\d+$/, 'must be a port number'), v.transform(Number), v.maxValue(65_535), kind('port')), '25'),
    'SMTP port of the bounce receiver (`0`: any free port). Below 1024 it needs root or `CAP_NET_BIND_SERVICE`.',
  ),
  BOUNCE_MAX_BYTES: about(
    integer(1024 * 1024, 1024),
    'Largest message the bounce receiver takes; a larger one is refused with 552 (relays return DSNs of 50–100 KB).',
  ),
  BOUNCE_MAX_CONNECTIONS_PER_IP: about(integer(20, 1), 'Open SMTP connections one client address may hold at the bounce receiver; past it 421.'),
  BOUNCE_MESSAGES_PER_MINUTE_PER_IP: about(
    integer(6_000, 1),
    'Messages one client address may deliver to the bounce receiver per minute; past it 451 (the relay retries later).',
  ),
  BOUNCE_METRICS_PORT: about(
    v.optional(v.pipe(v.string(), v.regex(/^\d+$/, 'must be a port number'), v.transform(Number), v.maxValue(65_535), kind('port'))),
    'The bounce receiver serves its Prometheus metrics on this port at `/metrics`, behind `ADMIN_TOKEN`. Unset: none.',
  ),
  BOUNCE_TLS_CERT: about(text(), 'PEM certificate chain file for STARTTLS at the bounce receiver (with `BOUNCE_TLS_KEY`). Unset: no STARTTLS.'),
  BOUNCE_TLS_KEY: about(text(), 'PEM private key file for `BOUNCE_TLS_CERT`.'),
  SUPPRESS_AFTER_HARD_BOUNCES: about(
    integer(3, 1),
    'Hard bounces from one mailbox, since its owner last signed in to the console, after which its submission emails are not attempted (`suppressed`).',
  ),
  SUPPRESS_FOR_HOURS: about(
    integer(24, 1),
    'How long a suppression lasts after the last hard bounce; the next submission after it is attempted again. Signing in lifts it at once.',
  ),
};

const score = (fallback: string) =>
  v.optional(v.pipe(v.string(), v.trim(), v.regex(/^-?\d+(\.\d+)?$/, 'must be a number'), v.transform(Number), kind('number')), fallback);

/** A comma-separated list of DNS zones (`zen.spamhaus.org`); unset or empty: none. */
const dnsZones = () =>
  v.optional(
    v.pipe(
      v.string(),
      v.trim(),
      v.transform((value) =>
        value
          .split(',')
          .map((zone) => zone.trim().toLowerCase().replace(/\.$/, ''))
          .filter(Boolean),
      ),
      v.check(
        (zones) => zones.every((zone) => /^(?:[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?\.)+[a-z0-9-]{2,63}$/.test(zone)),
        'must list DNS zones, comma-separated (zen.spamhaus.org)',
      ),
      kind('DNS zones, comma-separated'),
    ),
    '',
  );

/** A resolver as node's dns.setServers takes it: `10.0.0.2`, `10.0.0.2:5353`, `::1`, `[::1]:5353`. */
const isResolver = (entry: string) => {
  const bracketed = /^\[(?<address>[^\]]+)\](?::(?<port>\d{1,5}))?$/.exec(entry);
  const withPort = /^(?<address>[\d.]+):(?<port>\d{1,5})$/.exec(entry);
  const match = bracketed ?? withPort;
  const address = match?.groups?.address ?? entry;
  const port = match?.groups?.port === undefined ? 53 : Number(match.groups.port);
  return isIP(address) !== 0 && port >= 1 && port <= 65535;
};

const spam = {
  SPAM_FILTER: about(
    v.optional(v.pipe(v.string(), v.trim(), v.toLowerCase(), v.picklist(['on', 'off'], 'must be on or off'), kind('on or off')), 'on'),
    '`off`: no submission is checked for spam, and `npm start` starts no rspamd. `on`: each submission email is checked by the rspamd at `SPAM_FILTER_URL` before it is sent (unset URL: none is checked).',
  ),
  SPAM_FILTER_URL: about(
    v.optional(rspamdUrl()),
    "rspamd's scanner (its normal worker, port 11333 by default), which scores each email at `/checkv2`. `unix:/path`: its Unix socket, which costs each check less than TCP (docs/spam.md). `npm start` runs one when unset.",
  ),
  SPAM_FILTER_CONTROLLER_URL: about(
    v.optional(rspamdUrl()),
    "rspamd's controller (port 11334 by default), which learns from the owners' marks. Needed with `SPAM_FILTER_URL`.",
  ),
  SPAM_FILTER_PASSWORD: about(
    text(),
    "The controller's password (`CFS_CONTROLLER_PASSWORD` of the project's rspamd configuration; `npm start` makes one). Unset: none is sent, for an rspamd of your own that trusts this host (`secure_ip`).",
  ),
  SPAM_FILTER_START_WAIT_MS: about(
    integer(60_000, 0),
    'A starting worker takes no job until the filter answers a check, for at most this long (rspamd may still be loading its rules); past it, it starts anyway and emails go out unchecked while the filter does not answer (`0`: no wait).',
  ),
  SPAM_CHECK_TIMEOUT_MS: about(
    integer(500, 1),
    'How long a worker waits for a verdict, from when the check is sent. Past it, or when the filter is down, the email is sent unchecked (marked so): the filter costs time, never mail.',
  ),
  SPAM_CHECKS_IN_FLIGHT: about(
    integer(8, 1),
    "Checks one worker process sends at once; the others wait their turn, so a burst slows delivery instead of timing out unchecked. Keep workers × this near what the filter serves at once (rspamd's scanner is one process by default).",
  ),
  SPAM_SCORE_NORMAL: about(
    score('6'),
    "rspamd score from which a submission to a key at the `normal` level is held as spam. At 6 only the key's owner's own marks hold a message, and blocklists when the visitor's address and a domain of the message are both listed; links and everyone's marks, alone or together, stay under it (docs/spam.md).",
  ),
  SPAM_SCORE_STRICT: about(
    score('4'),
    "rspamd score from which a submission to a key at the `strict` level is held as spam. At 4 everyone's marks also hold what they make all but certain spam.",
  ),
  SPAM_TEACH_PER_KEY_PER_HOUR: about(
    integer(50, 0),
    "Marks (spam, not spam) from one key's owner taught to the filter per hour, so no key can flood what every key learns; past it a mark still moves the message at once and is taught later, oldest first, as the allowance frees up.",
  ),
  SPAM_TEACH_LATER_INTERVAL_MS: about(
    integer(5 * 60_000, 100),
    "How often the workers teach the marks left untaught (past their key's allowance, or made while the filter was unavailable).",
  ),
  SPAM_DNSBL_ZONES: about(
    dnsZones(),
    "DNS blocklists the visitor's address is looked up in during the spam check (`zen.spamhaus.org`, or `KEY.zen.dq.spamhaus.net` with a Spamhaus DQS key). Unset: none; read their terms first (docs/spam.md#blocklists).",
  ),
  SPAM_URIBL_ZONES: about(
    dnsZones(),
    "DNS blocklists the domains of the message's links and of the visitor's email are looked up in (`dbl.spamhaus.org`, `multi.surbl.org`, `multi.uribl.com`). Unset: none.",
  ),
  SPAM_DNS_SERVERS: about(
    commaList(isResolver, 'must list resolver addresses, comma-separated (10.0.0.2, 10.0.0.2:5353, [::1]:53)', 'addresses, comma-separated'),
    "The resolvers the blocklist lookups ask, in place of the system's (/etc/resolv.conf). Blocklists refuse the big public resolvers: use one of your own.",
  ),
  SPAM_DNS_TIMEOUT_MS: about(
    integer(300, 1),
    'How long the blocklist lookups of one check may take together; one still unanswered then counts as not listed. They run beside the filter, so a check waits at most this long for them.',
  ),
  SPAM_DISPOSABLE_EMAIL: about(
    boolean(true),
    "Whether a visitor's email at a disposable-address provider (the disposable-email-domains list) adds its small reason to the spam check.",
  ),
};

const fileScanning = {
  CLAMD_SOCKET: about(
    v.optional(
      v.pipe(
        v.string(),
        v.trim(),
        v.check(
          (value) => value.startsWith('/') && Buffer.byteLength(value) <= MAX_SOCKET_PATH_BYTES,
          `must be an absolute path of at most ${MAX_SOCKET_PATH_BYTES} bytes`,
        ),
        kind('path'),
      ),
    ),
    "clamd's Unix socket (its `LocalSocket`). With this or `CLAMD_HOST`, every file of a submission is scanned by the worker before anyone is sent or shown it (docs/file-scanning.md); with neither, files are not scanned.",
  ),
  CLAMD_HOST: about(
    v.optional(v.pipe(v.string(), v.trim(), v.minLength(1), kind('host name or address'))),
    'clamd over TCP (its `TCPSocket`), when `CLAMD_SOCKET` is unset.',
  ),
  CLAMD_PORT: about(v.optional(wholeNumber(1, 65_535), '3310'), "clamd's TCP port."),
  CLAMD_TIMEOUT_MS: about(
    integer(30_000, 1),
    "How long one file's scan may take, from the connection to the answer; past it clamd counts as down for that attempt.",
  ),
  SCAN_WAIT_MS: about(
    integer(600_000, 0),
    'How long, from the submission, its deliveries wait (retrying) for a scanner that is down or slow; past it they go out with the files `unscanned`: linked, not attached, and the email says so.',
  ),
  SCAN_UNAVAILABLE: about(
    v.optional(v.pipe(v.string(), v.trim(), v.toLowerCase(), v.picklist(['deliver', 'hold'], 'must be deliver or hold'), kind('deliver or hold')), 'deliver'),
    '`deliver`: past `SCAN_WAIT_MS` files go out unscanned. `hold`: deliveries keep waiting for the scanner (an email until its retry horizon), and no file goes out unscanned.',
  ),
  QUARANTINE_DAYS: about(
    integer(0, 0),
    '`0`: an infected file is deleted from storage at once. More: it is moved under `quarantine/` (never downloadable through the service) and deleted after this many days by the housekeeping jobs.',
  ),
  SCAN_MAX_BYTES: about(
    integer(10 * 1024 * 1024, 1),
    "The largest file sent to clamd; a larger one is `too_large_to_scan` (linked, not attached). clamd's `StreamMaxLength` must be at least this.",
  ),
};

/** The settings by topic, in the order docs/configuration.md shows them. */
export const SETTING_GROUPS = {
  'HTTP server': server,
  'Services the processes use': services,
  'Local services of npm start': local,
  'Secrets and operator access': operators,
  'Email': email,
  'Delivery and retries': delivery,
  'Abuse limits': abuse,
  'Retention': retention,
  'Webhooks': webhooks,
  'Bounces': bounces,
  'Spam filter': spam,
  'File scanning': fileScanning,
};

export const EnvSchema = v.object({
  ...server,
  ...services,
  ...local,
  ...operators,
  ...email,
  ...delivery,
  ...abuse,
  ...retention,
  ...webhooks,
  ...bounces,
  ...spam,
  ...fileScanning,
});
