// Preloaded with `node --import=./src/shared/infra/compile-cache.mjs` by the API and worker processes.
// Node's compile cache keeps the type-stripped source and V8's code of every module on disk, so a
// process whose sources are unchanged since an earlier start never loads the TypeScript stripper,
// which would stay in its memory for its whole life (docs/benchmarks.md#the-compile-cache), and
// starts faster. A file whose content changed is stripped again. It is JavaScript, not TypeScript,
// because it has to run before anything is stripped. NODE_COMPILE_CACHE, when set, names the
// directory instead; a directory that cannot be written only leaves the cache off. Not the shared
// temporary directory: the cache holds code that the process runs, so it lives with node_modules,
// which is as trusted.
import module from 'node:module';
import { fileURLToPath } from 'node:url';

module.enableCompileCache(process.env.NODE_COMPILE_CACHE || fileURLToPath(new URL('../../../node_modules/.cache/node-compile-cache', import.meta.url)));
