// When a program the tests need is missing and cannot be installed here, the test command says
// which package to install and how, and the tests that need it fail (they are never skipped).
import { spawn } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');

type Run = { code: number | null; output: string };

function runProcess(command: string, args: string[], options: { env: NodeJS.ProcessEnv }): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], ...options });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, output }));
  });
}

/** This run's environment without the variables of npm and vitest, as a shell would have it. */
function shellEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^(npm_|VITEST|TINYPOOL|NODE_OPTIONS$)/i.test(name)));
}

describe('the test command without a program the tests need', () => {
  // A vitest run of its own, which starts the services of its global setup: a minute quiet, several beside two busy loops.
  it('names the package and the command, and the tests that need it fail', async () => {
    const env: NodeJS.ProcessEnv = { ...shellEnv(), DOCKER_COMPOSE: '/nonexistent/docker-compose' };
    for (const name of ['DATABASE_URL', 'REDIS_URL', 'S3_ENDPOINT']) delete env[name];
    const run = await runProcess('npm', ['exec', '--', 'vitest', 'run', 'test/compose.test.ts'], { env });
    expect(run.code, run.output).toBe(1);
    expect(run.output).toContain('DOCKER_COMPOSE=/nonexistent/docker-compose is not an executable file');
    expect(run.output).toContain('apt-get install -y docker-compose');
    // The compose checks fail; the Dockerfile checks, which need no docker-compose, pass.
    const summary = /^tests: (\d+) passed, (\d+) failed(.*)$/m.exec(run.output);
    expect(summary, run.output).not.toBeNull();
    expect(Number(summary![2])).toBeGreaterThanOrEqual(10);
    expect(summary![3]).toBe(''); // nothing skipped
  }, 240_000);
});
