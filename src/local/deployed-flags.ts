// The Node flags that `npm run start:api` / `start:worker` / `start:bounces` give the service's processes, read from
// package.json so that `npm start` and the benchmark run them exactly as deployed.
import { readFileSync } from 'node:fs';

type StartScript = 'start:api' | 'start:worker' | 'start:bounces';

const ROOT = new URL('../../', import.meta.url);
const scripts = (JSON.parse(readFileSync(new URL('package.json', ROOT), 'utf8')) as { scripts: Record<string, string> }).scripts;

/** The flags as the script spells them. */
export const startScriptFlags = (script: StartScript): string[] =>
  /\bnode\s+((?:--\S+\s+)*)src\//
    .exec(scripts[script] ?? '')?.[1]
    ?.trim()
    .split(/\s+/)
    .filter(Boolean) ?? [];

/** The flags to spawn with: a preload given relative to the project (`--import=./src/…`) becomes a file URL, which holds from any directory. */
export const deployedNodeFlags = (script: StartScript): string[] =>
  startScriptFlags(script).map((flag) => flag.replace(/^--import=(\.\/\S+)$/, (_, file: string) => `--import=${new URL(file, ROOT).href}`));
