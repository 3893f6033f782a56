// The compile cache that the API and worker processes preload (src/shared/infra/compile-cache.mjs): a
// process started again on unchanged sources does not load the TypeScript stripper. That the start
// commands preload it: test/unit/infra/compile-cache.test.ts.
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const PRELOAD = '--import=./src/shared/infra/compile-cache.mjs';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'cfs-compile-cache-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/**
 * Loads a TypeScript module with the preload and no NODE_COMPILE_CACHE, as the start commands do;
 * says where the cache is and whether the stripper was loaded.
 */
async function start(module: string): Promise<{ cacheDir: string | undefined; stripperLoaded: boolean }> {
  const probe = path.join(dir, 'probe.mjs');
  await writeFile(
    probe,
    `import module from 'node:module';
await import(${JSON.stringify(module)});
console.log(JSON.stringify({ cacheDir: module.getCompileCacheDir(), stripperLoaded: process.moduleLoadList.some((name) => name.includes('amaro')) }));`,
  );
  const env = { ...process.env };
  delete env.NODE_COMPILE_CACHE;
  const { stdout } = await run(process.execPath, [PRELOAD, probe], { cwd: process.cwd(), env });
  return JSON.parse(stdout) as { cacheDir: string | undefined; stripperLoaded: boolean };
}

/** A TypeScript module whose content no earlier run has seen (the cache is keyed by content). */
async function freshModule(name: string): Promise<string> {
  const module = path.join(dir, `${name}.ts`);
  await writeFile(module, `export const nonce: string = ${JSON.stringify(randomUUID())};\n`);
  return module;
}

describe('the compile cache', () => {
  it('lives in node_modules/.cache and strips a module once: the next start does not load the stripper', async () => {
    const module = await freshModule('once');
    const first = await start(module);
    expect(first.cacheDir?.startsWith(path.resolve('node_modules/.cache/node-compile-cache'))).toBe(true);
    expect(first.stripperLoaded).toBe(true);
    expect((await readdir(first.cacheDir!)).length).toBeGreaterThan(0);

    expect((await start(module)).stripperLoaded).toBe(false);
  });

  it('strips a module again when its source changed', async () => {
    const module = await freshModule('changing');
    expect((await start(module)).stripperLoaded).toBe(true);
    expect((await start(module)).stripperLoaded).toBe(false);
    await writeFile(module, `export const nonce: string = ${JSON.stringify(randomUUID())};\n`);
    expect((await start(module)).stripperLoaded).toBe(true);
  });
});
