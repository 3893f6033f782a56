// `npm run start:bounces`: the bounce receiver, an SMTP server for BOUNCE_DOMAIN. Uses only the
// configured services and never starts any.
import module from 'node:module';
import { exitOnConfigErrorAsync, loadConfigOrExit } from '../shared/infra/config.ts';
import { createLogger } from '../shared/infra/log.ts';
import { exitOnBusyPorts, tellParentReady } from '../shared/infra/preflight.ts';

const config = loadConfigOrExit();
const log = createLogger('bounces', config.LOG_LEVEL);
const domain = config.BOUNCE_DOMAIN;
if (!domain) {
  process.stderr.write('Invalid configuration:\n  BOUNCE_DOMAIN: is required by the bounce receiver (the domain of the return paths)\n');
  process.exit(78); // EX_CONFIG, as for any other bad variable
}
// Before anything is opened: a taken port is one line and exit 78.
await exitOnBusyPorts([
  { setting: 'BOUNCE_SMTP_PORT', host: config.BOUNCE_SMTP_HOST, port: config.BOUNCE_SMTP_PORT },
  ...(config.BOUNCE_METRICS_PORT === undefined ? [] : [{ setting: 'BOUNCE_METRICS_PORT', host: config.HOST, port: config.BOUNCE_METRICS_PORT }]),
]);
// Loaded only now: the checks above answer within a second, before the module graph loads.
const { startBounceReceiver } = await import('./process.ts');
try {
  const receiver = await exitOnConfigErrorAsync(() => startBounceReceiver({ ...config, BOUNCE_DOMAIN: domain }, log));
  receiver.shutdown.onSignals(config.SHUTDOWN_TIMEOUT_MS);
  tellParentReady();
} catch (error) {
  const code = (error as NodeJS.ErrnoException).code;
  if (code !== 'EACCES' && code !== 'EADDRINUSE') throw error;
  const why = code === 'EACCES' ? 'a port below 1024 needs root or CAP_NET_BIND_SERVICE' : 'another program listens there';
  process.stderr.write(
    `The bounce receiver cannot listen on ${config.BOUNCE_SMTP_HOST}:${config.BOUNCE_SMTP_PORT}: ${why}. Set BOUNCE_SMTP_PORT (e.g. 2525) or BOUNCE_SMTP_HOST.\n`,
  );
  process.exit(78);
}
// Every module is loaded by now: write the compile cache at once (see src/api/main.ts).
module.flushCompileCache();
