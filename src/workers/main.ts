// `npm run start:worker`: one delivery worker process with WORKER_CONCURRENCY parallel jobs.
// Uses only the configured services and never starts any.
import module from 'node:module';
import { exitOnConfigErrorAsync, loadConfigOrExit } from '../shared/infra/config.ts';
import { createLogger } from '../shared/infra/log.ts';
import { exitOnBusyPorts, tellParentReady } from '../shared/infra/preflight.ts';
import { buildInfo } from '../shared/infra/version.ts';

const config = loadConfigOrExit();
// Before a job is taken: a taken port is one line and exit 78, not a failure after emails went out.
await exitOnBusyPorts(config.METRICS_PORT === undefined ? [] : [{ setting: 'METRICS_PORT', host: config.HOST, port: config.METRICS_PORT }]);
// Loaded only now: the checks above answer within a second, before the module graph loads.
const { startWorker } = await import('./worker.ts');
const log = createLogger('worker', config.LOG_LEVEL);
const worker = await exitOnConfigErrorAsync(() => startWorker(config, log));
worker.shutdown.onSignals(config.SHUTDOWN_TIMEOUT_MS);
// Only now: whoever waits for this line (a supervisor, the tests) may stop the worker at once, and
// a SIGTERM before the handlers were installed would kill it without its shutdown.
log.info({ concurrency: config.WORKER_CONCURRENCY, version: buildInfo().version }, 'worker ready');
tellParentReady();
// Every module is loaded by now: write the compile cache (src/shared/infra/compile-cache.mjs) at once,
// not only at a clean exit, so that a process killed later still leaves it for the next start.
module.flushCompileCache();
