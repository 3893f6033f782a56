// `npm start`: the whole service on one machine. For each of DATABASE_URL, REDIS_URL, S3_ENDPOINT
// and SMTP_URL that is unset it starts a real local service with its data under DATA_DIR,
// applies the migrations, then runs the API and one worker as child processes, and the bounce
// receiver too when BOUNCE_DOMAIN is set. Unless SPAM_FILTER=off or SPAM_FILTER_URL names one, it
// runs rspamd too, when it can. Unless CLAMD_SOCKET or CLAMD_HOST names one, it runs clamd to scan
// uploaded files when clamd is installed and has a signature database (it never installs it).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { deployedNodeFlags } from './deployed-flags.ts';
import { ConfigError, loadConfig, loadConfigOrExit, loadConfigSubset } from '../shared/infra/config.ts';
import PinoPretty from 'pino-pretty';
import { createLogger } from '../shared/infra/log.ts';
import { generateSecret } from '../shared/infra/secrets.ts';
import { checkSecret } from '../shared/infra/secret-check.ts';
import { relayForDisplay } from '../shared/infra/mail.ts';
import { spamFilterFromConfig } from '../shared/spam/spam-filter.ts';
import { freePort, LOCAL_S3_CREDENTIALS, ServiceStartError, startMailCatcher, startPostgres, startRedis, startS3, stopChild } from './services.ts';
import { startRspamd } from './rspamd.ts';
import { findClamd, hasSignatureDatabase, localDatabaseDir, startClamd } from './clamd.ts';
import { LOCAL_DATABASE, localPaths } from './data-dir.ts';
import { DataDirInUseError, lockDataDir } from './data-dir-lock.ts';
import { busyPort } from '../shared/infra/preflight.ts';
import { startServersInOwnProcessGroups } from './processes.ts';
import { SECOND_PRESS_AFTER_MS } from '../shared/infra/shutdown.ts';
import { buildInfo } from '../shared/infra/version.ts';

// Every process's JSON log lines, made readable for a person at the terminal.
// isTTY is undefined, not false, when stdout is not a terminal, whatever Node's types say.
// eslint-disable-next-line @typescript-eslint/no-unnecessary-type-conversion
const readable = PinoPretty({ colorize: Boolean(process.stdout.isTTY), translateTime: 'SYS:HH:MM:ss', ignore: 'pid,hostname' });
const log = createLogger('local', process.env.LOG_LEVEL ?? 'info', readable);
const env: NodeJS.ProcessEnv = { ...process.env };
const dataDir = path.resolve(env.DATA_DIR || '.data');
const local = localPaths(dataDir);
/** Local services, in the order they started; stopped last, together. */
const services: Array<{ name: string; stop: () => Promise<void> }> = [];
/** The API and the worker; stopped first, together. */
const children: Array<{ name: string; child: ChildProcess; stop: () => Promise<void> }> = [];
let stopping: Promise<void> | undefined;
let stopRequestedAt = 0;

async function stopLogged(name: string, stop: () => Promise<void>): Promise<void> {
  try {
    await stop();
    log.info({ name }, 'stopped');
  } catch (error) {
    log.error({ err: error, name }, 'stop failed');
  }
}

/**
 * Stops the API and the worker (it finishes its jobs in flight, up to SHUTDOWN_TIMEOUT_MS), then
 * the services they used, together.
 */
function stopAll(exitCode: number): Promise<void> {
  if (stopping) return stopping;
  stopRequestedAt = Date.now();
  stopping = (async () => {
    await Promise.all(children.map(({ name, stop }) => stopLogged(name, stop)));
    // Nothing uses the services any more, and none needs another to stop: all at once, so a stop
    // takes as long as the slowest one, not their sum.
    await Promise.all(services.map(({ name, stop }) => stopLogged(name, stop)));
    process.exit(exitCode);
  })();
  return stopping;
}

// The services run in process groups of their own, so a Ctrl+C reaches only this process, the API
// and the worker; the services stop after them, in order.
startServersInOwnProcessGroups();
const onSignal = (signal: NodeJS.Signals) => {
  if (!stopping) return void stopAll(0);
  // A second Ctrl+C: the API and the worker end now (claimed rows are recovered after the claim lease).
  if (signal === 'SIGINT' && Date.now() - stopRequestedAt >= SECOND_PRESS_AFTER_MS) {
    log.warn('stopping at once');
    for (const { child } of children) child.kill('SIGKILL');
  }
};
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, onSignal);
// If whatever started us dies without a signal reaching us, stop too rather than linger.
const parentPid = process.ppid;
setInterval(() => process.ppid !== parentPid && void stopAll(0), 1_000).unref();

/** Each child's readiness: it says so over the IPC channel once it listens (src/shared/infra/preflight.ts). */
function runChild(name: string, script: string, nodeFlags: string[] = []): Promise<void> {
  const child = spawn(process.execPath, [...nodeFlags, fileURLToPath(new URL(script, import.meta.url))], {
    env: { ...env, CFS_EXIT_WITH_PARENT: '1' },
    stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
  });
  child.stdout!.pipe(readable, { end: false });
  children.push({ name, child, stop: () => stopChild(child, 'SIGTERM', Number(env.SHUTDOWN_TIMEOUT_MS ?? 30_000) + 5_000) });
  return new Promise((resolve) => {
    child.once('message', () => {
      child.channel?.unref();
      resolve();
    });
    child.once('exit', (code, signal) => {
      if (stopping) return;
      // 78: the child found a setting or a port wrong and said so in one line; pass its code on.
      if (code === 78) return void stopAll(78);
      log.error({ name, code, signal }, 'child process exited; stopping everything');
      void stopAll(1);
    });
  });
}

/** A check before anything starts that failed: one line, exit 78 (EX_CONFIG). */
class PreflightError extends Error {
  override name = 'PreflightError';
}

const LOCAL_PORTS = ['LOCAL_POSTGRES_PORT', 'LOCAL_REDIS_PORT', 'LOCAL_S3_PORT', 'LOCAL_SMTP_PORT', 'LOCAL_MAIL_UI_PORT', 'LOCAL_RSPAMD_PORT'] as const;
type LocalPorts = Record<(typeof LOCAL_PORTS)[number], number>;

const oneLine = (error: ConfigError) => error.message.replace(/\n\s*/g, ' ');

/**
 * Every setting validated, the data directory taken and every port checked free, before any
 * service, process or job starts: a failure is one line, within a second or two, with nothing
 * started and nothing sent. The ports of the local services are chosen here (or read from their
 * settings), so the configuration checked is the one the processes get.
 */
async function preflight(): Promise<{ ports: LocalPorts; saveSecret: () => Promise<void> }> {
  let chosen: Partial<Record<(typeof LOCAL_PORTS)[number], number>>;
  try {
    chosen = loadConfigSubset([...LOCAL_PORTS], env);
  } catch (error) {
    throw error instanceof ConfigError ? new PreflightError(oneLine(error)) : error;
  }
  const ports = {} as LocalPorts;
  for (const name of LOCAL_PORTS) ports[name] = chosen[name] ?? (await freePort());
  const spamFilter = env.SPAM_FILTER?.trim().toLowerCase() !== 'off' && !env.SPAM_FILTER_URL;
  // The addresses the local services will have: the processes' settings, checked now.
  const planned: NodeJS.ProcessEnv = { ...env };
  planned.DATABASE_URL ||= `postgres://postgres:postgres@127.0.0.1:${ports.LOCAL_POSTGRES_PORT}/${LOCAL_DATABASE}`;
  planned.REDIS_URL ||= `redis://127.0.0.1:${ports.LOCAL_REDIS_PORT}`;
  if (!planned.S3_ENDPOINT) {
    planned.S3_ENDPOINT = `http://127.0.0.1:${ports.LOCAL_S3_PORT}`;
    planned.S3_ACCESS_KEY_ID ||= LOCAL_S3_CREDENTIALS.accessKeyId;
    planned.S3_SECRET_ACCESS_KEY ||= LOCAL_S3_CREDENTIALS.secretAccessKey;
  }
  planned.SMTP_URL ||= `smtp://127.0.0.1:${ports.LOCAL_SMTP_PORT}`;
  // The generated secret is written only once the checks pass: a refused start changes nothing.
  const kept = env.SECRET ? undefined : await keptSecret(local.secret);
  planned.SECRET ||= kept?.secret;
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig(planned);
  } catch (error) {
    throw error instanceof ConfigError ? new PreflightError(oneLine(error)) : error;
  }
  try {
    lockDataDir(dataDir);
  } catch (error) {
    throw error instanceof DataDirInUseError ? new PreflightError(error.message) : error;
  }
  const loopback = (setting: string, port: number) => ({ setting, host: '127.0.0.1', port });
  const busy = await busyPort([
    { setting: 'PORT', host: config.HOST, port: config.PORT },
    ...(config.METRICS_PORT === undefined ? [] : [{ setting: 'METRICS_PORT', host: config.HOST, port: config.METRICS_PORT }]),
    ...(config.BOUNCE_DOMAIN ? [{ setting: 'BOUNCE_SMTP_PORT', host: config.BOUNCE_SMTP_HOST, port: config.BOUNCE_SMTP_PORT }] : []),
    ...(config.BOUNCE_DOMAIN && config.BOUNCE_METRICS_PORT !== undefined
      ? [{ setting: 'BOUNCE_METRICS_PORT', host: config.HOST, port: config.BOUNCE_METRICS_PORT }]
      : []),
    ...(env.DATABASE_URL ? [] : [loopback('LOCAL_POSTGRES_PORT', ports.LOCAL_POSTGRES_PORT)]),
    ...(env.REDIS_URL ? [] : [loopback('LOCAL_REDIS_PORT', ports.LOCAL_REDIS_PORT)]),
    ...(env.S3_ENDPOINT ? [] : [loopback('LOCAL_S3_PORT', ports.LOCAL_S3_PORT)]),
    ...(env.SMTP_URL ? [] : [loopback('LOCAL_SMTP_PORT', ports.LOCAL_SMTP_PORT), loopback('LOCAL_MAIL_UI_PORT', ports.LOCAL_MAIL_UI_PORT)]),
    ...(spamFilter ? [loopback('LOCAL_RSPAMD_PORT', ports.LOCAL_RSPAMD_PORT)] : []),
  ]);
  if (busy) throw new PreflightError(busy);
  return { ports, saveSecret: async () => kept?.save() };
}

async function main(): Promise<void> {
  const { ports, saveSecret } = await preflight();
  await saveSecret();
  const { createOrm, migrate } = await import('../shared/infra/db/orm.ts');
  const { entities } = await import('../shared/schema.ts');
  const urls: Record<string, string> = {};
  if (!env.DATABASE_URL) {
    const pg = await startPostgres({ dir: local.postgres, persistent: true, database: LOCAL_DATABASE, port: ports.LOCAL_POSTGRES_PORT });
    services.push(pg);
    env.DATABASE_URL = pg.url;
    urls.postgres = pg.url;
  }
  if (!env.REDIS_URL) {
    const redis = await startRedis({ dir: path.join(dataDir, 'redis'), port: ports.LOCAL_REDIS_PORT });
    services.push(redis);
    env.REDIS_URL = redis.url;
    urls.redis = redis.url;
  }
  if (!env.S3_ENDPOINT) {
    const s3 = await startS3({ dir: local.s3, bucket: env.S3_BUCKET || 'contact-form-files', port: ports.LOCAL_S3_PORT });
    services.push(s3);
    env.S3_ENDPOINT = s3.url;
    urls.s3 = s3.url;
    env.S3_ACCESS_KEY_ID ||= LOCAL_S3_CREDENTIALS.accessKeyId;
    env.S3_SECRET_ACCESS_KEY ||= LOCAL_S3_CREDENTIALS.secretAccessKey;
  }
  if (!env.SMTP_URL) {
    const mail = await startMailCatcher({ dir: path.join(dataDir, 'mail'), smtpPort: ports.LOCAL_SMTP_PORT, webPort: ports.LOCAL_MAIL_UI_PORT });
    services.push(mail);
    env.SMTP_URL = mail.url;
    urls.mail = mail.webUrl;
  }

  if (env.SPAM_FILTER?.trim().toLowerCase() !== 'off' && !env.SPAM_FILTER_URL) {
    // Run when it can be: a machine without rspamd (and no root to install it) runs without the filter.
    try {
      const rspamd = await startRspamd({ dir: path.join(dataDir, 'rspamd'), controllerPort: ports.LOCAL_RSPAMD_PORT });
      services.push(rspamd);
      env.SPAM_FILTER_URL = rspamd.url;
      env.SPAM_FILTER_CONTROLLER_URL = rspamd.controllerUrl;
      env.SPAM_FILTER_PASSWORD = rspamd.password;
      urls.spam = `${rspamd.url} (rspamd; learning at ${rspamd.controllerUrl})`;
    } catch (error) {
      if (!(error instanceof ServiceStartError)) throw error;
      log.warn(`${error.message}\nThe service runs without a spam filter.`);
      urls.spam = 'off (rspamd could not start; see above)';
    }
  }

  if (env.CLAMD_SOCKET) urls.files = `scanned by clamd at ${env.CLAMD_SOCKET}`;
  else if (env.CLAMD_HOST) urls.files = `scanned by clamd at ${env.CLAMD_HOST}:${env.CLAMD_PORT || 3310}`;
  else urls.files = await startLocalClamd();

  const secretSource = { file: local.secret, fromFile: !env.SECRET };
  env.SECRET ||= (await keptSecret(local.secret)).secret;
  const config = loadConfigOrExit(env);
  const orm = await createOrm(config.DATABASE_DIRECT_URL, entities, 2);
  const applied = await migrate(orm);
  await orm.close();
  if (applied.length) log.info({ applied }, 'migrations applied');
  // Here, where the message can say which file the SECRET came from; the API and the worker check again.
  await checkSecret(config.DATABASE_URL, config.SECRET, secretSource);

  // As `npm run start:worker` / `start:api` run them: the compile cache, and the worker's small young
  // generation, which keeps its memory low under base64-heavy mail (docs/benchmarks.md).
  // The API first: should it fail to listen, no worker has taken a job yet.
  await runChild('api', '../api/main.ts', deployedNodeFlags('start:api'));
  if (config.BOUNCE_DOMAIN) {
    await runChild('bounces', '../bounces/main.ts', deployedNodeFlags('start:bounces'));
    urls.bounces = `smtp://${config.BOUNCE_SMTP_HOST}:${config.BOUNCE_SMTP_PORT} for ${config.BOUNCE_DOMAIN}`;
  }
  // Ready once the spam filter answers (or its wait at start ran out): the banner comes after.
  await runChild('worker', '../workers/main.ts', deployedNodeFlags('start:worker'));
  urls.api = config.PUBLIC_URL;

  // What it uses, each under the name of its setting's subject, secrets hidden: what the operator
  // set is seen at once, and what was left unset (bounces, the spam filter) says "off".
  const relay = relayForDisplay(config.SMTP_URL);
  const labels: Array<[string, string | undefined]> = [
    ['API', urls.api],
    ['Mail UI', urls.mail],
    ['Mail relay', urls.mail ? `${relay} (the local mail catcher)` : relay],
    ['Mail from', config.MAIL_FROM],
    ['Bounces', urls.bounces ?? 'off (BOUNCE_DOMAIN is unset)'],
    ['Spam filter', spamFilterFromConfig(config) ? (urls.spam ?? config.SPAM_FILTER_URL) : (urls.spam ?? 'off (SPAM_FILTER=off)')],
    ['Files', urls.files],
    ['PostgreSQL', urls.postgres],
    ['Redis', urls.redis],
    ['S3', urls.s3],
    ['Data', dataDir],
  ];
  const lines = [
    '',
    `Contact form service ${buildInfo().version} is running:`,
    ...labels.filter(([, value]) => value).map(([label, value]) => `  ${label.padEnd(13)}${value}`),
    'Press Ctrl+C to stop.',
    '',
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

/**
 * A local clamd for the worker's scans (CLAMD_SOCKET), when clamd is installed and has signatures to
 * load: scanning is not needed to run, so nothing is installed here and the service runs without
 * it otherwise. What the banner says of uploaded files.
 */
async function startLocalClamd(): Promise<string> {
  const databaseDir = localDatabaseDir(env);
  if (!findClamd(env)) return 'not scanned (clamd is not installed: install clamav-daemon and run freshclam, docs/operations.md#scanning-uploaded-files)';
  if (!hasSignatureDatabase(databaseDir)) return `not scanned (clamd has no signature database in ${databaseDir}: run freshclam, or set CLAMD_DATABASE_DIR)`;
  try {
    const clamd = await startClamd({ databaseDir, dir: path.join(dataDir, 'clamd') });
    services.push(clamd);
    env.CLAMD_SOCKET = clamd.socket;
    return `scanned by clamd at ${clamd.socket}`;
  } catch (error) {
    if (!(error instanceof ServiceStartError)) throw error;
    log.warn(`${error.message}\nUploaded files are not scanned.`);
    return 'not scanned (clamd could not start; see above)';
  }
}

/**
 * The server secret of this data directory: made once, then kept, since the stored keys depend on
 * it. A new one is written by `save`, once the start's checks have passed.
 */
async function keptSecret(file: string): Promise<{ secret: string; save: () => Promise<void> }> {
  try {
    return { secret: (await readFile(file, 'utf8')).trim(), save: () => Promise.resolve() };
  } catch {
    const secret = generateSecret();
    return {
      secret,
      save: async () => {
        await mkdir(path.dirname(file), { recursive: true });
        await writeFile(file, `${secret}\n`, { mode: 0o600, flag: 'wx' });
      },
    };
  }
}

main().catch((error: unknown) => {
  if (error instanceof PreflightError) {
    process.stderr.write(`npm start: ${error.message}\n`);
    process.exit(78); // EX_CONFIG: nothing was started
  }
  // A service that could not start is explained in plain words (which, why, what to do), not a stack.
  if (error instanceof ServiceStartError || error instanceof ConfigError) process.stderr.write(`\nnpm start: ${error.message}\n\n`);
  else log.error({ err: error }, 'start failed');
  void stopAll(1);
});
