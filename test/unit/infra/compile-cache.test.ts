// The compile cache (src/shared/infra/compile-cache.mjs) is preloaded by every command that starts
// the API or a worker. test/compile-cache.test.ts starts processes with it and reads what it saves.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { deployedNodeFlags } from '../../../src/local/deployed-flags.ts';

const PRELOAD = '--import=./src/shared/infra/compile-cache.mjs';

describe('the compile cache', () => {
  it('is preloaded by the API and worker start commands (docker-compose.yml: test/compose.test.ts; the Dockerfile: test/unit/deploy/dockerfile.test.ts)', () => {
    const scripts = (JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: Record<string, string> }).scripts;
    expect(scripts['start:api']).toContain(`node ${PRELOAD} src/api/main.ts`);
    expect(scripts['start:worker']).toMatch(new RegExp(`node ${PRELOAD} (--\\S+ )*src/workers/main.ts`));
  });

  it("is preloaded by `npm start` and the benchmark too, which take the start scripts' flags with the preload as a file URL", () => {
    const preload = `--import=${pathToFileURL(path.resolve('src/shared/infra/compile-cache.mjs')).href}`;
    expect(deployedNodeFlags('start:api')).toEqual([preload]);
    expect(deployedNodeFlags('start:worker')).toEqual([preload, '--max-semi-space-size=4']);
  });
});
