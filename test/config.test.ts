// A bad configuration stops the process with the variable's name, as a message, not a stack trace.
// What each value means and which it refuses is checked without a process: test/unit/config.test.ts.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '..');
// A process that stops at its configuration check starts in about a second; beside two busy loops it took over 20.
const SPAWN_LIMIT_MS = 50_000;
const VALID = {
  DATABASE_URL: 'postgres://u:p@127.0.0.1:5432/db',
  REDIS_URL: 'redis://127.0.0.1:6379',
  SMTP_URL: 'smtp://127.0.0.1:1025',
  SECRET: 'a-server-secret-of-at-least-32-characters',
};

describe('process start with a bad configuration', () => {
  it.each(['src/api/main.ts', 'src/workers/main.ts'])('%s exits with a message naming the variable', (script) => {
    const result = spawnSync(process.execPath, [script], {
      cwd: ROOT,
      env: { PATH: process.env.PATH, ...VALID, EMAIL_MAX_ATTEMPTS: 'many' },
      encoding: 'utf8',
      timeout: SPAWN_LIMIT_MS,
    });
    expect(result.status).toBe(78);
    expect(result.stderr).toContain('EMAIL_MAX_ATTEMPTS: must be a whole number');
    expect(result.stderr).not.toContain('    at '); // a message, not a stack trace
  });
});

describe('process start with a published sample secret', () => {
  it.each(['src/api/main.ts', 'src/workers/main.ts', 'src/bounces/main.ts', 'src/cli/migrate.ts'])('%s exits naming the setting', (script) => {
    const result = spawnSync(process.execPath, [script], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH,
        ...VALID,
        // docker-compose.yml's and the Kubernetes overlays' former placeholders.
        DATABASE_URL: 'postgres://contact_form:change-me@postgres.example.internal:5432/contact_form',
        SECRET: 'change-me-to-a-random-secret-of-32-chars-or-more',
        BOUNCE_DOMAIN: 'bounces.example.com',
      },
      encoding: 'utf8',
      timeout: SPAWN_LIMIT_MS,
    });
    expect(result.status).toBe(78);
    expect(result.stderr).toContain('DATABASE_URL: its password is a sample value published with this project; set your own');
    if (!script.includes('migrate')) expect(result.stderr).toContain('SECRET: is a sample value published with this project');
    expect(result.stderr).not.toContain('    at ');
  });
});

describe('a worker without SMTP_URL', () => {
  it('exits with a message naming it: the workers send the emails, the other processes need no relay', () => {
    const { SMTP_URL: _relay, ...withoutRelay } = VALID;
    const result = spawnSync(process.execPath, ['src/workers/main.ts'], {
      cwd: ROOT,
      env: { PATH: process.env.PATH, ...withoutRelay },
      encoding: 'utf8',
      timeout: SPAWN_LIMIT_MS,
    });
    expect(result.status).toBe(78);
    expect(result.stderr).toContain('SMTP_URL: is required by a worker, which sends the emails');
  });
});
