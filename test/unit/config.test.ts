// The configuration is read once, at start, from the environment (src/shared/infra/config.ts): the rules
// between variables, what an empty value means, and the values derived from others. The integration
// tier's test/config.test.ts covers the defaults, each variable's own checks and a process that
// exits on a bad value.
import { describe, expect, it } from 'vitest';
import { ConfigError, CROSS_CHECKS, loadConfig, loadConfigSubset } from '../../src/shared/infra/config.ts';

const VALID = {
  DATABASE_URL: 'postgres://u:p@127.0.0.1:5432/db',
  REDIS_URL: 'redis://127.0.0.1:6379',
  SMTP_URL: 'smtp://127.0.0.1:1025',
  SECRET: 'a-server-secret-of-at-least-32-characters',
};
const TOKEN = 'an-operator-token-0123';

describe('the rules between variables', () => {
  it.each([
    [{ DKIM_DOMAIN: 'example.com' }, 'DKIM_DOMAIN, DKIM_SELECTOR, DKIM_PRIVATE_KEY: set all three or none'],
    [{ BOUNCE_METRICS_PORT: '9101' }, 'BOUNCE_METRICS_PORT: needs ADMIN_TOKEN'],
    [{ BOUNCE_TLS_CERT: '/etc/ssl/bounce.crt' }, 'BOUNCE_TLS_CERT, BOUNCE_TLS_KEY: set both or neither'],
    [{ SPAM_FILTER_URL: 'http://127.0.0.1:11333' }, 'SPAM_FILTER_URL, SPAM_FILTER_CONTROLLER_URL: set both or neither'],
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
