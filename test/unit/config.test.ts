// The configuration is read once, at start, from the environment (src/shared/infra/config.ts): the
// defaults, each variable's own checks, the rules between variables, what an empty value means, and
// the values derived from others. The integration tier's test/config.test.ts starts a process with a
// bad value and reads how it exits.
import { describe, expect, it } from 'vitest';
import { ConfigError, CROSS_CHECKS, loadConfig, loadConfigSubset } from '../../src/shared/infra/config.ts';

const VALID = {
  DATABASE_URL: 'postgres://u:p@127.0.0.1:5432/db',
  REDIS_URL: 'redis://127.0.0.1:6379',
  SMTP_URL: 'smtp://127.0.0.1:1025',
  SECRET: 'a-server-secret-of-at-least-32-characters',
};
const TOKEN = 'an-operator-token-0123';

describe('loadConfig', () => {
  it('applies the documented defaults', () => {
    const config = loadConfig(VALID);
    expect(config).toMatchObject({
      PORT: 3000,
      HOST: '0.0.0.0',
      PUBLIC_URL: 'http://localhost:3000',
      S3_REGION: 'us-east-1',
      S3_FORCE_PATH_STYLE: true,
      WORKER_CONCURRENCY: 50,
      EMAIL_RETRY_BACKOFF_MS: 30_000,
      EMAIL_RETRY_MAX_BACKOFF_MS: 3_600_000,
      EMAIL_RETRY_HORIZON_MS: 5 * 24 * 3_600_000,
      DATA_DIR: '.data',
      RATE_LIMIT_IPV6_PREFIX: 64,
      BODY_IDLE_TIMEOUT_MS: 20_000,
      BODY_MIN_BYTES_PER_SECOND: 100,
      HTTP_HEADERS_TIMEOUT_MS: 20_000,
      HTTP_REQUEST_TIMEOUT_MS: 300_000,
      HTTP_KEEP_ALIVE_TIMEOUT_MS: 65_000,
      CONNECTIONS_PER_IP: 100,
    });
    // No attempt limit: temporary failures are retried until EMAIL_RETRY_HORIZON_MS.
    expect(config.EMAIL_MAX_ATTEMPTS).toBeUndefined();
  });

  it('refuses a header timeout longer than the request timeout', () => {
    expect(() => loadConfig({ ...VALID, HTTP_HEADERS_TIMEOUT_MS: '30000', HTTP_REQUEST_TIMEOUT_MS: '10000' })).toThrow(
      'HTTP_HEADERS_TIMEOUT_MS: must not exceed HTTP_REQUEST_TIMEOUT_MS',
    );
  });

  it('refuses a worker metrics port without the operator token that guards it', () => {
    expect(() => loadConfig({ ...VALID, METRICS_PORT: '9100' })).toThrow('METRICS_PORT: needs ADMIN_TOKEN');
    expect(loadConfig({ ...VALID, METRICS_PORT: '9100', ADMIN_TOKEN: 'an-operator-token-0123' }).METRICS_PORT).toBe(9100);
  });

  it.each([
    ['PORT', 'abc', 'must be a whole number'],
    ['DATABASE_URL', 'mysql://x/y', 'must start with postgres:// or postgresql://'],
    ['SMTP_URL', 'not a url', 'must be a URL'],
    ['S3_FORCE_PATH_STYLE', 'maybe', 'must be true or false'],
    ['WORKER_CONCURRENCY', '0', 'must be at least 1'],
    ['ADMIN_TOKEN', 'short', 'must be at least 16 characters'],
    ['RATE_LIMIT_IPV6_PREFIX', '129', 'must be at most 128'],
    ['RATE_LIMIT_IPV6_PREFIX', '0', 'must be at least 1'],
    ['SPAM_FILTER_URL', 'ftp://127.0.0.1:11333', 'must start with http://, https:// or unix:/'],
    ['SPAM_FILTER_URL', 'unix:run/rspamd.sock', "unix: takes a socket's absolute path of at most 107 bytes"],
    ['SPAM_FILTER_URL', 'unix://run/rspamd.sock', "unix: takes a socket's absolute path of at most 107 bytes"],
    ['SPAM_FILTER_URL', `unix:/${'a'.repeat(107)}`, "unix: takes a socket's absolute path of at most 107 bytes"],
    ['SPAM_FILTER_URL', 'unix:/run/50%zz.sock', "unix: takes a socket's absolute path of at most 107 bytes"],
  ])('names %s when it is %j', (name, value, reason) => {
    expect(() => loadConfig({ ...VALID, [name]: value })).toThrow(`${name}: ${reason}`);
  });

  it("takes rspamd's address as a URL or a Unix socket's path", () => {
    const both = (url: string) => ({ ...VALID, SPAM_FILTER_URL: url, SPAM_FILTER_CONTROLLER_URL: 'http://127.0.0.1:11334' });
    expect(loadConfig(both('unix:/run/rspamd/normal.sock')).SPAM_FILTER_URL).toBe('unix:/run/rspamd/normal.sock');
    expect(loadConfig(both('unix:///run/rspamd/normal.sock')).SPAM_FILTER_URL).toBe('unix:///run/rspamd/normal.sock');
    expect(loadConfig(both(`unix:/${'a'.repeat(106)}`)).SPAM_FILTER_URL).toHaveLength(112);
    expect(loadConfig(both('http://rspamd:11333')).SPAM_FILTER_URL).toBe('http://rspamd:11333');
  });

  it('names a missing required variable', () => {
    expect(() => loadConfig({ ...VALID, DATABASE_URL: undefined })).toThrow('DATABASE_URL: is required');
  });

  it('refuses to start without a SECRET, or with a short one', () => {
    expect(() => loadConfig({ ...VALID, SECRET: undefined })).toThrow('SECRET: is required');
    expect(() => loadConfig({ ...VALID, SECRET: 'short' })).toThrow('SECRET: must be at least 32 characters');
  });
});

describe('the rules between variables', () => {
  it.each([
    [{ DKIM_DOMAIN: 'example.com' }, 'DKIM_DOMAIN, DKIM_SELECTOR, DKIM_PRIVATE_KEY: set all three or none'],
    [{ BOUNCE_METRICS_PORT: '9101' }, 'BOUNCE_METRICS_PORT: needs ADMIN_TOKEN'],
    [{ BOUNCE_TLS_CERT: '/etc/ssl/bounce.crt' }, 'BOUNCE_TLS_CERT, BOUNCE_TLS_KEY: set both or neither'],
    [{ SPAM_FILTER_URL: 'http://127.0.0.1:11333' }, 'SPAM_FILTER_URL, SPAM_FILTER_CONTROLLER_URL: set both or neither'],
    [{ DATABASE_POOLER: 'transaction' }, 'with DATABASE_POOLER=transaction, set DATABASE_DIRECT_URL to PostgreSQL itself'],
  ])('refuse %j, saying the rule', (env, rule) => {
    expect(() => loadConfig({ ...VALID, ...env })).toThrow(ConfigError);
    expect(() => loadConfig({ ...VALID, ...env })).toThrow(rule);
  });

  it('accept the same variables set together', () => {
    const config = loadConfig({
      ...VALID,
      BOUNCE_METRICS_PORT: '9101',
      ADMIN_TOKEN: TOKEN,
      BOUNCE_TLS_CERT: '/etc/ssl/bounce.crt',
      BOUNCE_TLS_KEY: '/etc/ssl/bounce.key',
      SPAM_FILTER_URL: 'http://127.0.0.1:11333',
      SPAM_FILTER_CONTROLLER_URL: 'http://127.0.0.1:11334',
    });
    expect(config).toMatchObject({ BOUNCE_METRICS_PORT: 9101, BOUNCE_TLS_KEY: '/etc/ssl/bounce.key', SPAM_FILTER_CONTROLLER_URL: 'http://127.0.0.1:11334' });
  });

  it('each name the variables it is about, for docs/configuration.md', () => {
    for (const check of CROSS_CHECKS) expect(check.rule).toMatch(/^[A-Z_]+(, [A-Z_]+)*: /);
  });
});

describe('behind a connection pooler', () => {
  it('is not assumed: DATABASE_POOLER is none, and the direct address is DATABASE_URL', () => {
    expect(loadConfig(VALID)).toMatchObject({ DATABASE_POOLER: 'none', DATABASE_DIRECT_URL: VALID.DATABASE_URL });
  });

  it('takes the pooler in DATABASE_URL and PostgreSQL itself in DATABASE_DIRECT_URL', () => {
    const env = {
      ...VALID,
      DATABASE_URL: 'postgres://u:p@pgbouncer:6432/db',
      DATABASE_POOLER: 'transaction',
      DATABASE_DIRECT_URL: 'postgres://u:p@postgres:5432/db',
    };
    expect(loadConfig(env)).toMatchObject({ DATABASE_URL: env.DATABASE_URL, DATABASE_POOLER: 'transaction', DATABASE_DIRECT_URL: env.DATABASE_DIRECT_URL });
  });

  it.each([
    [{ DATABASE_POOLER: 'session' }, 'DATABASE_POOLER: must be none or transaction'],
    [{ DATABASE_DIRECT_URL: 'mysql://u:p@db/db' }, 'DATABASE_DIRECT_URL: must start with postgres:// or postgresql://'],
  ])('refuses %j, naming the setting', (env, message) => {
    expect(() => loadConfig({ ...VALID, ...env })).toThrow(message);
  });
});

describe('an empty variable', () => {
  it('counts as unset, as shells and compose files export them: the default applies', () => {
    expect(loadConfig({ ...VALID, PORT: '', WORKER_CONCURRENCY: '' })).toMatchObject({ PORT: 3000, WORKER_CONCURRENCY: 50 });
  });

  it('of a required variable is missing', () => {
    expect(() => loadConfig({ ...VALID, SECRET: '' })).toThrow('SECRET: is required');
  });
});

describe('the public address', () => {
  it('is PUBLIC_URL without its trailing slashes', () => {
    expect(loadConfig({ ...VALID, PUBLIC_URL: 'https://forms.example.com//' }).PUBLIC_URL).toBe('https://forms.example.com');
  });

  it('is localhost at PORT when unset and the API listens on every address, else HOST', () => {
    expect(loadConfig({ ...VALID, PORT: '8080' }).PUBLIC_URL).toBe('http://localhost:8080');
    expect(loadConfig({ ...VALID, HOST: '::' }).PUBLIC_URL).toBe('http://localhost:3000');
    expect(loadConfig({ ...VALID, HOST: '127.0.0.1' }).PUBLIC_URL).toBe('http://127.0.0.1:3000');
  });
});

describe('TRUST_PROXY', () => {
  it('is a hop count or a list of addresses and CIDR ranges', () => {
    expect(loadConfig({ ...VALID, TRUST_PROXY: '2' }).TRUST_PROXY).toEqual({ hops: 2 });
    expect(loadConfig({ ...VALID, TRUST_PROXY: '10.0.0.0/8, 192.168.1.5,fd00::/8' }).TRUST_PROXY).toEqual({
      ranges: ['10.0.0.0/8', '192.168.1.5', 'fd00::/8'],
    });
  });

  it('refuses anything else, naming what it takes', () => {
    for (const value of ['10.0.0.0/33', 'proxy.example.com', '1,2']) {
      expect(() => loadConfig({ ...VALID, TRUST_PROXY: value }), value).toThrow(
        'TRUST_PROXY: must be a hop count or a comma-separated list of addresses and CIDR ranges',
      );
    }
  });
});

describe('a subset of the configuration', () => {
  it('is read and checked without the variables it does not need', () => {
    expect(loadConfigSubset(['DATABASE_URL'], { DATABASE_URL: VALID.DATABASE_URL })).toEqual({ DATABASE_URL: VALID.DATABASE_URL });
    expect(() => loadConfigSubset(['DATABASE_URL'], { DATABASE_URL: 'mysql://x/y' })).toThrow('DATABASE_URL: must start with postgres://');
  });
});
