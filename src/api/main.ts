// `npm run start:api`: the HTTP API. Uses only the configured services and never starts any.
import { loadConfigOrExit } from '../shared/config.ts';
import { createLogger } from '../shared/log.ts';
import { startApi } from './server.ts';

const config = loadConfigOrExit();
const log = createLogger('api', config.LOG_LEVEL);
const api = await startApi(config, log);
api.shutdown.onSignals(config.SHUTDOWN_TIMEOUT_MS);
