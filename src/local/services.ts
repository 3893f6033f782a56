// Real local services for `npm start`, the tests and the benchmarks: PostgreSQL (postgres.ts),
// redis-server, an S3-compatible server and an SMTP mail catcher, each on a free loopback port.
// Production never imports this module.
import type { ChildProcess } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import path from 'node:path';
import { freePort, LOOPBACK, ServiceStartError, spawnTracked, starting, stopChild, waitForOutput, type LocalService } from './processes.ts';
import { MissingToolError, requireSystemTool } from './system-tools.ts';

export { freePort, ServiceStartError, stopChild, type LocalService } from './processes.ts';
export { ROOT_POSTGRES_HOME, startPostgres, type PostgresOptions } from './postgres.ts';

// ---------------------------------------------------------------- Redis

/** Makes sure `redis-server` exists, installing Debian's package when this is Debian or Ubuntu as root. */
export function ensureRedisServer(): string {
  try {
    return requireSystemTool({
      binary: 'redis-server',
      package: 'redis-server',
      neededFor: 'the job queue (BullMQ)',
      alternative: 'or set REDIS_URL to a running Redis >= 6.2',
    });
  } catch (error) {
    if (error instanceof MissingToolError) throw new ServiceStartError('Redis', error.reason, error.remedy);
    throw error;
  }
}

export type RedisOptions = {
  /** With a directory, Redis keeps an append-only file there (jobs survive a restart). */
  dir?: string;
  port?: number;
  /** Also listens on this Unix socket, for its owner only. */
  unixSocket?: string;
  extraArgs?: string[];
};

export async function startRedis(options: RedisOptions = {}): Promise<LocalService & { port: number; child: ChildProcess }> {
  const binary = ensureRedisServer();
  const port = options.port ?? (await freePort());
  const persistence = options.dir
    ? ['--dir', path.resolve(options.dir), '--appendonly', 'yes', '--appendfsync', 'everysec', '--save', '']
    : ['--appendonly', 'no', '--save', ''];
  const remedy = `read redis-server's output above${options.dir ? ` (its data is in ${path.resolve(options.dir)})` : ''}; to use a Redis of your own instead, set REDIS_URL.`;
  if (options.dir) await starting('Redis', remedy, () => mkdir(options.dir!, { recursive: true }));
  const child = spawnTracked(
    'SIGTERM',
    binary,
    [
      '--port',
      String(port),
      '--bind',
      LOOPBACK,
      '--maxmemory-policy',
      'noeviction',
      ...persistence,
      ...(options.unixSocket ? ['--unixsocket', options.unixSocket, '--unixsocketperm', '700'] : []),
      ...(options.extraArgs ?? []),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  await starting('Redis', remedy, () => waitForOutput(child, /Ready to accept connections/, 'redis-server'));
  child.stdout?.resume();
  child.stderr?.resume();
  return { name: 'redis', url: `redis://${LOOPBACK}:${port}`, port, child, stop: () => stopChild(child, 'SIGTERM') };
}

// ---------------------------------------------------------------- S3

/** `address`: where to listen, loopback by default. */
export type S3Options = { dir: string; bucket: string; port?: number; address?: string };

export const LOCAL_S3_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } as const;

export async function startS3(options: S3Options): Promise<LocalService> {
  const remedy = `check that ${path.resolve(options.dir)} is writable; to use an S3 service of your own instead, set S3_ENDPOINT.`;
  return starting('S3 (s3rver)', remedy, async () => {
    const { default: S3rver } = await import('s3rver');
    await mkdir(options.dir, { recursive: true });
    const server = new S3rver({
      address: options.address ?? LOOPBACK,
      port: options.port ?? 0,
      directory: path.resolve(options.dir),
      silent: true,
      configureBuckets: [{ name: options.bucket, configs: [] }],
    });
    const { port } = await server.run();
    return { name: 's3', url: `http://${options.address ?? LOOPBACK}:${port}`, stop: () => server.close() };
  });
}

// ---------------------------------------------------------------- Mail catcher

export type MailCatcherOptions = { dir: string; smtpPort?: number; webPort?: number };

/** MailDev: an SMTP server that keeps every message and shows them in a web UI. */
export async function startMailCatcher(options: MailCatcherOptions): Promise<LocalService & { webUrl: string }> {
  const remedy = `check that ${path.resolve(options.dir)} is writable; to send mail through a server of your own instead, set SMTP_URL.`;
  return starting('Mail catcher (MailDev)', remedy, async () => {
    const { MailDev } = await import('maildev');
    const smtpPort = options.smtpPort ?? (await freePort());
    const webPort = options.webPort ?? (await freePort());
    await mkdir(options.dir, { recursive: true });
    const maildev = new MailDev({
      smtp: smtpPort,
      web: webPort,
      ip: LOOPBACK,
      webIp: LOOPBACK,
      mailDirectory: path.resolve(options.dir),
      silent: true,
    });
    // MailDev's API prints its address on the console whatever `silent` says; the banner names it.
    const info = console.info;
    console.info = (...args: unknown[]) => {
      if (!String(args[0]).startsWith('MailDev API running at')) info(...args);
    };
    try {
      await maildev.start();
    } finally {
      console.info = info;
    }
    answerNonBrowsers(maildev.getServers()?.api, `http://${LOOPBACK}:${webPort}`);
    return {
      name: 'mail',
      url: `smtp://${LOOPBACK}:${smtpPort}`,
      webUrl: `http://${LOOPBACK}:${webPort}`,
      stop: () => maildev.stop(),
    };
  });
}

/**
 * MailDev serves its UI only to a client that accepts text/html; `curl` of the banner's address got
 * `{"error":"Not found"}`. Its root now tells such a client, in plain text, to open it in a browser
 * (and where the API is). MailDev's HTTP server is reached through its Fastify instance, which its
 * types keep private: when that ever changes, the UI simply stays as MailDev serves it.
 */
function answerNonBrowsers(api: unknown, address: string): void {
  const server = (api as { app?: { server?: Server } } | undefined)?.app?.server;
  if (!server) return;
  const [handler] = server.listeners('request') as Array<(request: IncomingMessage, response: ServerResponse) => void>;
  if (!handler) return;
  server.removeAllListeners('request');
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const browser = (request.headers.accept ?? '').includes('text/html');
    if (request.method === 'GET' && (request.url === '/' || request.url === '') && !browser) {
      response.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
      response.end(
        `This is the local mail catcher's web UI: open ${address} in a browser to read the emails the service sent.\n` +
          `For scripts: GET ${address}/api/email lists them as JSON.\n`,
      );
      return;
    }
    handler(request, response);
  });
}
