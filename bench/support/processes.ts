// The processes under test (the API, the worker and their floors): started with the run's Node
// flags, and stopped with the warnings and errors they logged noted.
import { deployedNodeFlags } from '../../src/local/deployed-flags.ts';
import { FLOOR_PK_TABLE, FLOOR_PREFIX, WORKER_CONCURRENCY, type Ctx, type Run } from './context.ts';
import { sleep, spawnNode, type Child } from './proc.ts';

/** Node flags of a process under test: --node-flags, and a CPU profile with --profile. */
export const flagsFor = (run: Run, name: string, deployed: string[] = []) => [
  ...deployed,
  ...run.nodeFlags,
  ...(run.profileDir ? ['--cpu-prof', '--cpu-prof-dir', run.profileDir, '--cpu-prof-name', `${name}-${Date.now()}.cpuprofile`] : []),
];

/** `timeoutMs`: how long it may take to listen (a restart on a loaded machine may take longer than the default). */
export async function spawnApi(ctx: Ctx, name = 'api', timeoutMs?: number): Promise<{ child: Child; url: string }> {
  const child = await spawnNode({
    name,
    script: 'src/api/main.ts',
    env: ctx.env,
    readyPattern: /api listening/,
    ...(timeoutMs !== undefined ? { timeoutMs } : {}),
    nodeArgs: flagsFor(ctx, name, deployedNodeFlags('start:api')),
  });
  const port = /"port":(\d+)/.exec(child.output())?.[1];
  const url = `http://127.0.0.1:${port}`;
  // Listening comes before Redis is connected: wait until every dependency answers.
  const until = Date.now() + Math.max(20_000, timeoutMs ?? 0);
  while (
    !(await fetch(`${url}/readyz`).then(
      (response) => response.ok,
      () => false,
    ))
  ) {
    if (Date.now() > until) throw new Error(`${name} never became ready:\n${child.output()}`);
    await sleep(100);
  }
  return { child, url };
}

export async function spawnFloor(ctx: Ctx): Promise<{ child: Child; url: string }> {
  const child = await spawnNode({
    name: 'floor',
    script: 'bench/floor/api.ts',
    env: { ...ctx.env, QUEUE_PREFIX: FLOOR_PREFIX, FLOOR_KEY_ID: ctx.keyId, FLOOR_PK_TABLE },
    readyPattern: /floor listening \d+/,
    nodeArgs: flagsFor(ctx, 'floor'),
  });
  const port = /floor listening (\d+)/.exec(child.output())?.[1];
  return { child, url: `http://127.0.0.1:${port}` };
}

export function spawnWorker(ctx: Ctx, index: number, env: Record<string, string> = {}, timeoutMs?: number): Promise<Child> {
  return spawnNode({
    name: `worker-${index}`,
    script: 'src/workers/main.ts',
    env: { ...ctx.env, ...env },
    readyPattern: /worker ready/,
    ...(timeoutMs !== undefined ? { timeoutMs } : {}),
    nodeArgs: flagsFor(ctx, `worker-${index}`, deployedNodeFlags('start:worker')),
  });
}

export function spawnFloorWorker(ctx: Ctx): Promise<Child> {
  return spawnNode({
    name: 'floor-worker',
    script: 'bench/floor/worker.ts',
    env: { ...ctx.env, QUEUE_PREFIX: FLOOR_PREFIX, WORKER_CONCURRENCY: String(WORKER_CONCURRENCY) },
    readyPattern: /floor worker ready/,
    nodeArgs: flagsFor(ctx, 'floor-worker'),
  });
}

/** A floor worker of the whole pipeline (scenario 12): reads and updates the floor API's primary-key-only table. */
export function spawnFloorPipelineWorker(ctx: Ctx, index: number): Promise<Child> {
  const name = `floor-worker-${index}`;
  return spawnNode({
    name,
    script: 'bench/floor/pipeline-worker.ts',
    env: { ...ctx.env, QUEUE_PREFIX: FLOOR_PREFIX, WORKER_CONCURRENCY: String(WORKER_CONCURRENCY), FLOOR_PK_TABLE },
    readyPattern: /floor pipeline worker ready/,
    nodeArgs: flagsFor(ctx, name),
  });
}

/** Stops a process under test, noting the warnings and errors it logged. */
export async function stopReporting(ctx: Ctx, child: Child, context: string): Promise<void> {
  await child.stop();
  const problems = child.problems();
  if (problems) ctx.notes.push(`${context}: ${child.name} logged ${problems.count} warning(s)/error(s), the first: ${problems.first}`);
}
