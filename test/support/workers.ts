// Worker processes as separate OS processes, for the tests that kill them.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { stopChild } from '../../src/local/services.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');

export type WorkerChild = { child: ChildProcess; output: () => string; stop: () => Promise<void>; kill: () => Promise<void> };

export async function spawnWorker(env: Record<string, string>): Promise<WorkerChild> {
  const child = spawn(process.execPath, ['src/workers/main.ts'], {
    cwd: ROOT,
    env: { ...process.env, ...env, LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`worker did not start:\n${output}`)), 20_000);
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('worker ready')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`worker exited with ${code}:\n${output}`));
    });
  });
  // The listener above goes on collecting the output.
  return {
    child,
    output: () => output,
    stop: () => stopChild(child, 'SIGTERM', 15_000),
    kill: () => stopChild(child, 'SIGKILL'),
  };
}
