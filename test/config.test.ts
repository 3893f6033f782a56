// A bad configuration stops the process with the variable's name, as a message, not a stack trace.
// What each value means and which it refuses is checked without a process: test/unit/config.test.ts.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '..');
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
      timeout: 20_000,
    });
    expect(result.status).toBe(78);
    expect(result.stderr).toContain('EMAIL_MAX_ATTEMPTS: must be a whole number');
    expect(result.stderr).not.toContain('    at '); // a message, not a stack trace
  });
});
