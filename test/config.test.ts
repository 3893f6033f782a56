// Configuration is read once and validated; a bad value stops the process with the variable's name.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/shared/infra/config.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const VALID = {
  DATABASE_URL: 'postgres://u:p@127.0.0.1:5432/db',
  REDIS_URL: 'redis://127.0.0.1:6379',
  SMTP_URL: 'smtp://127.0.0.1:1025',
  SECRET: 'a-server-secret-of-at-least-32-characters',
};

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

describe('process start with a bad configuration', () => {
  it.each(['src/api/main.ts', 'src/workers/main.ts'])('%s exits with a message naming the variable', (script) => {
    const result = spawnSync(process.execPath, [script], {
      cwd: ROOT,
      env: { PATH: process.env.PATH, ...VALID, EMAIL_MAX_ATTEMPTS: 'many' },
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(result.status).toBe(78);
    expect(result.stderr).toContain('EMAIL_MAX_ATTEMPTS: must be a whole number');
    expect(result.stderr).not.toContain('    at '); // a message, not a stack trace
  });
});
