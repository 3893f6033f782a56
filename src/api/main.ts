// `npm run start:api`: the HTTP API. Uses only the configured services and never starts any.
import module from 'node:module';
import { exitOnConfigErrorAsync, loadConfigOrExit } from '../shared/infra/config.ts';
import { createLogger } from '../shared/infra/log.ts';
import { exitOnBusyPorts, tellParentReady } from '../shared/infra/preflight.ts';

const config = loadConfigOrExit();
// Before anything is opened: a taken port is one line and exit 78, not a stack after the start.
await exitOnBusyPorts([{ setting: 'PORT', host: config.HOST, port: config.PORT }]);
// Loaded only now: the checks above answer within a second, before the module graph loads.
const { startApi } = await import('./server.ts');
const log = createLogger('api', config.LOG_LEVEL);
const api = await exitOnConfigErrorAsync(() => startApi(config, log));
api.shutdown.onSignals(config.SHUTDOWN_TIMEOUT_MS);
tellParentReady();
// Every module is loaded by now: write the compile cache (src/shared/infra/compile-cache.mjs) at once,
// not only at a clean exit, so that a process killed later still leaves it for the next start.
module.flushCompileCache();
