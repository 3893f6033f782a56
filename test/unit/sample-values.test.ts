// The secret values the project publishes as samples (src/shared/infra/sample-values.ts) stop a
// process at start, naming the setting, like any other bad value; and every sample the repository
// shows for a secret setting is among them.
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, loadConfigSubset } from '../../src/shared/infra/config.ts';
import { PUBLISHED_SAMPLE_VALUES, SECRET_SETTINGS, URL_PASSWORD_SETTINGS } from '../../src/shared/infra/sample-values.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const VALID = {
  DATABASE_URL: 'postgres://u:a-real-password@db.internal:5432/db',
  DATABASE_DIRECT_URL: 'postgres://u:a-real-password@db-primary.internal:5432/db',
  REDIS_URL: 'redis://:another-real-password@redis.internal:6379',
  SMTP_URL: 'smtp://forms:relay-password-1@smtp.internal:587',
  SECRET: 'a-server-secret-of-at-least-32-characters',
  ADMIN_TOKEN: 'an-operator-token-0123',
  SPAM_FILTER_PASSWORD: 'a-spam-filter-password',
  S3_SECRET_ACCESS_KEY: 'an-s3-secret-key',
};

function refusal(env: Record<string, string>): string {
  try {
    loadConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error('the configuration was accepted');
}

describe('a published sample value', () => {
  it('is accepted nowhere: own values start', () => {
    expect(loadConfig(VALID).SECRET).toBe(VALID.SECRET);
  });

  it.each([...PUBLISHED_SAMPLE_VALUES].flatMap((sample) => SECRET_SETTINGS.map((name) => [name, sample] as const)))(
    'stops a process as %s = %s, in one line naming the setting',
    (name, sample) => {
      // SECRET's own length rule would refuse a short sample first; pad none: the line must name SECRET either way.
      const message = refusal({ ...VALID, [name]: sample });
      expect(message.split('\n')[0]).toBe('Invalid configuration:');
      expect(message).toMatch(new RegExp(`^  ${name}: `, 'm'));
    },
  );

  it('stops a process as the password of DATABASE_URL, DATABASE_DIRECT_URL, REDIS_URL or SMTP_URL', () => {
    for (const name of URL_PASSWORD_SETTINGS) {
      for (const sample of PUBLISHED_SAMPLE_VALUES) {
        const url = new URL(VALID[name]);
        url.password = sample;
        expect(refusal({ ...VALID, [name]: url.href }), `${name} with ${sample}`).toContain(
          `  ${name}: its password is a sample value published with this project; set your own`,
        );
      }
    }
  });

  it('stops the migration CLI too, which reads DATABASE_URL alone', () => {
    expect(() => loadConfigSubset(['DATABASE_URL'], { DATABASE_URL: 'postgres://contact_form:trial-postgres-password@postgres:5432/contact_form' })).toThrow(
      /DATABASE_URL: its password is a sample value/,
    );
  });

  it("is the local database's only on loopback, where npm start runs it", () => {
    const local = 'postgres://postgres:postgres@127.0.0.1:36523/contact_form';
    expect(loadConfig({ ...VALID, DATABASE_URL: local }).DATABASE_URL).toBe(local);
    expect(refusal({ ...VALID, DATABASE_URL: 'postgres://postgres:postgres@db.example.com:5432/contact_form' })).toContain('DATABASE_URL: its password');
  });
});

describe("the repository's samples", () => {
  it("of docker-compose.yml's secret settings are all refused", async () => {
    const compose = await readFile(path.join(ROOT, 'docker-compose.yml'), 'utf8');
    const defaults = [...compose.matchAll(/\$\{([A-Z0-9_]*(?:SECRET|TOKEN|PASSWORD)[A-Z0-9_]*):-([^}]+)\}/g)].map((match) => [match[1], match[2]]);
    for (const [name, value] of defaults) expect(PUBLISHED_SAMPLE_VALUES, `${name} defaults to ${value}`).toContain(value!.toLowerCase());
  });

  it('of URL passwords in the docs are all refused (but for the local database on loopback)', async () => {
    const files = ['README.md', ...(await readdir(path.join(ROOT, 'docs'))).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`)];
    for (const file of files) {
      const text = await readFile(path.join(ROOT, file), 'utf8');
      for (const match of text.matchAll(/\b(?:postgres|postgresql|redis|rediss|smtp|smtps):\/\/([^:/@\s`]*):([^@/\s`*]+)@([^/:\s`]+)/g)) {
        const [, , password, host] = match;
        if (password!.startsWith('$') || (password === 'postgres' && /^(127\.|localhost)/.test(host!))) continue;
        expect(PUBLISHED_SAMPLE_VALUES, `${file}: ${match[0]}`).toContain(password!.toLowerCase());
      }
    }
  });
});
