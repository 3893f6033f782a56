// The last line of `npm test`, `tests: N passed, N failed[, N skipped] (setup failed in …)`, is what
// CI reads: a run of vitest over a few throwaway test files, with the project's reporter, must
// count each kind of outcome where it belongs.
import { spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '..');
const dirs: string[] = [];
afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

/**
 * Runs vitest in a directory of its own with the given test files (globals on, so they import
 * nothing); `projects`, when given, splits them into projects as vitest.config.ts does.
 */
function runVitest(
  files: Record<string, string>,
  projects?: Array<{ name: string; include: string[]; exclude?: string[] }>,
): Promise<{ code: number | null; output: string }> {
  const dir = mkdtempSync(path.join(tmpdir(), 'cfs-reporter-'));
  dirs.push(dir);
  for (const [name, source] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, 'test', name)), { recursive: true });
    writeFileSync(path.join(dir, 'test', name), source);
  }
  const reporter = path.join(ROOT, 'test/setup/summary-reporter.ts');
  // Projects extend the root's options, and arrays add up: the root names no files of its own then.
  const selection = projects ? `projects: ${JSON.stringify(projects.map((test) => ({ extends: true, test })))}` : `include: ['test/**/*.test.ts']`;
  writeFileSync(path.join(dir, 'vitest.config.mjs'), `export default { test: { ${selection}, globals: true, reporters: [${JSON.stringify(reporter)}] } };\n`);
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [path.join(ROOT, 'node_modules/vitest/vitest.mjs'), 'run', '--root', dir, '--config', path.join(dir, 'vitest.config.mjs')],
      {
        cwd: dir,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^(VITEST|TINYPOOL)/.test(name))),
      },
    );
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, output }));
  });
}

const summaryLine = (output: string) => /^tests: .*$/m.exec(output)?.[0];

describe('the summary line of a test run', () => {
  it('counts passed, failed and skipped tests, and the tests of a file whose setup failed as failed, naming the file', async () => {
    const run = await runVitest({
      // A skipped test on purpose: the reporter must show it as skipped.
      'mixed.test.ts': `it('passes', () => {});\nit.skip('is skipped on purpose', () => {});\nit('fails', () => { throw new Error('no'); });\n`,
      'broken-setup.test.ts': `beforeAll(() => { throw new Error('setup broke'); });\nit('one', () => {});\nit('two', () => {});\n`,
    });
    expect(run.code, run.output).toBe(1);
    expect(summaryLine(run.output), run.output).toBe('tests: 1 passed, 3 failed, 1 skipped (setup failed in 1 file(s): broken-setup.test.ts)');
  });

  it('counts the tests of both tiers in one line, naming a file of either whose setup failed', async () => {
    const run = await runVitest(
      {
        'unit/rules.test.ts': `it('a', () => {});\nit('b', () => {});\n`,
        'unit/broken.test.ts': `beforeAll(() => { throw new Error('setup broke'); });\nit('one', () => {});\n`,
        'api/flow.test.ts': `it('c', () => {});\nit.skip('d', () => {});\n`,
      },
      [
        { name: 'unit', include: ['test/unit/**/*.test.ts'] },
        { name: 'integration', include: ['test/**/*.test.ts'], exclude: ['test/unit/**'] },
      ],
    );
    expect(run.code, run.output).toBe(1);
    expect(summaryLine(run.output), run.output).toBe('tests: 3 passed, 1 failed, 1 skipped (setup failed in 1 file(s): unit/broken.test.ts)');
  });

  it('says only the passed count when every test passed', async () => {
    const run = await runVitest({ 'green.test.ts': `it('a', () => {});\nit('b', () => {});\n` });
    expect(run.code, run.output).toBe(0);
    expect(summaryLine(run.output), run.output).toBe('tests: 2 passed, 0 failed');
  });
});
