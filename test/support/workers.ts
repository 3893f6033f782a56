// Worker and API processes as separate OS processes, for the tests that kill them or run them on
// hosts of their own (network namespaces).
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import path from 'node:path';
import { stopChild } from '../../src/local/services.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');

export type WorkerChild = { child: ChildProcess; output: () => string; stop: () => Promise<void>; kill: () => Promise<void> };

/** Starts a program: node's own spawn, or one that runs it elsewhere (on a host of the partition tests). */
export type Launcher = (command: string, args: string[], options: SpawnOptions) => ChildProcess;

/** How long a start may take: far above a usual start, which on a busy machine can outlast half a minute. */
export const SERVICE_START_WAIT_MS = 90_000;

/** Another tree of the service to run (the previous release's) and the Node it runs on; this one's by default. */
export type Tree = { cwd: string; node: string };

/** Starts one of the service's entry points and waits for its ready line in the log. */
export async function spawnService(
  entry: string,
  readyLine: string,
  env: Record<string, string>,
  launch: Launcher = spawn,
  tree: Tree = { cwd: ROOT, node: process.execPath },
): Promise<WorkerChild> {
  const child = launch(tree.node, [entry], {
    cwd: tree.cwd,
    env: { ...process.env, ...env, LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  await new Promise<void>((resolve, reject) => {
    // A process that did not start in time is killed: started later, nothing would stop it.
    const timer = setTimeout(() => {
      void stopChild(child, 'SIGKILL');
      reject(new Error(`${entry} did not start within ${SERVICE_START_WAIT_MS / 1000} s:\n${output}`));
    }, SERVICE_START_WAIT_MS);
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes(readyLine)) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${entry} exited with ${code}:\n${output}`));
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

export const spawnWorker = (env: Record<string, string>, launch?: Launcher) => spawnService('src/workers/main.ts', 'worker ready', env, launch);

export const spawnApi = (env: Record<string, string>, launch?: Launcher) => spawnService('src/api/main.ts', 'api listening', env, launch);
