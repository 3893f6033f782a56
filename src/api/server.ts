// Builds the API process from a config: its clients, the app and the HTTP server, each registered
// for an ordered shutdown. Used by `start:api` and by the tests.
import { spamFilterFromConfig } from '../shared/spam/spam-filter.ts';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Config } from '../shared/infra/config.ts';
import { createOrm } from '../shared/infra/db/orm.ts';
import { createPgPool, statementRunner } from '../shared/infra/db/pg-pool.ts';
import { entities } from '../shared/schema.ts';
import type { Logger } from '../shared/infra/log.ts';
import { registerQueueDepth } from '../shared/infra/metrics.ts';
import { closeRedis, createRedis, redisTopology } from '../shared/infra/queues/redis.ts';
import { createDeliveryQueue, createWebhookQueue } from '../shared/infra/queues/queues.ts';
import { Shutdown } from '../shared/infra/shutdown.ts';
import { startTracing } from '../shared/infra/tracing.ts';
import { createErasedForm, createKeyVault } from '../shared/infra/secrets.ts';
import { checkSecretAtStart } from '../shared/infra/secret-check.ts';
import { createStorage } from '../shared/infra/storage.ts';
import { createApp } from './app.ts';
import { watchBodyProgress } from './body-progress.ts';
import { buildInfo } from '../shared/infra/version.ts';
import { rateLimitSubject } from './client-ip.ts';
import { capConnectionsPerIp } from './connection-cap.ts';
import type { AppDeps } from './context.ts';
import { createKeyCache } from './submissions/key-cache.ts';
import { apiPgWaits } from './unavailable.ts';
import type { DeliveryJob } from '../shared/deliveries/delivery-jobs.ts';

/** PostgreSQL connections for the submissions' group commit, beside the ORM's pool. */
const INTAKE_CONNECTIONS = 4;
/** PostgreSQL connections for the writes of submissions with files, each held for two round trips. */
const FILE_WRITE_CONNECTIONS = 10;

export type ApiProcess = { server: Server; url: string; deps: AppDeps; shutdown: Shutdown };

export async function startApi(config: Config, log: Logger): Promise<ApiProcess> {
  const shutdown = new Shutdown(log);
  // First, before anything is opened: with another SECRET than the data's, nothing may start.
  const secretCheck = await checkSecretAtStart(config.DATABASE_URL, config.SECRET, log, (error) => {
    log.fatal(error.message);
    shutdown.exitWith(78);
  });
  shutdown.add('secret check', secretCheck, (check) => check.stop());
  // Before the queues, which take BullMQ's telemetry from it; stopped last, after them.
  const tracing = await startTracing(config, 'api', log);
  if (tracing) shutdown.add('tracing', tracing, (tracing) => tracing.stop());
  const pgWaits = apiPgWaits(config);
  const orm = shutdown.add('postgres', await createOrm(config.DATABASE_URL, entities, undefined, pgWaits), (orm) => orm.close());
  // The group commit's two INSERTs in flight, and room for the row-by-row retry of a shared write that failed.
  const intakePool = shutdown.add('postgres (intake)', createPgPool(config.DATABASE_URL, INTAKE_CONNECTIONS, pgWaits.timeouts, pgWaits), (pool) => pool.end());
  const filesPool = shutdown.add('postgres (files)', createPgPool(config.DATABASE_URL, FILE_WRITE_CONNECTIONS, pgWaits.timeouts, pgWaits), (pool) =>
    pool.end(),
  );
  const redis = shutdown.add('redis', createRedis(config.REDIS_URL, 'producer', redisTopology(config)), closeRedis);
  redis.on('error', (error) => log.debug({ err: error }, 'redis error'));
  const queue = shutdown.add('queue', createDeliveryQueue<DeliveryJob>(redis, config), (queue) => queue.close());
  queue.on('error', (error) => log.debug({ err: error }, 'queue error'));
  registerQueueDepth(queue);
  const webhookQueue = shutdown.add('webhook queue', createWebhookQueue<DeliveryJob>(redis, config.QUEUE_PREFIX), (queue) => queue.close());
  webhookQueue.on('error', (error) => log.debug({ err: error }, 'webhook queue error'));
  registerQueueDepth(webhookQueue, 'cfs_webhook_queue_jobs', 'Jobs in the webhook queue by state');
  const storage = shutdown.add('storage', createStorage(config, { maxConcurrentUploads: config.UPLOAD_CONCURRENCY }), (storage) => storage.close());

  const vault = createKeyVault(config.SECRET);
  const keys = shutdown.add('key cache', createKeyCache({ databaseUrl: config.DATABASE_DIRECT_URL, ttlMs: config.KEY_CACHE_TTL_MS, vault, log }), (keys) =>
    keys.close(),
  );
  const deps: AppDeps = {
    config,
    orm,
    intakePool: statementRunner(intakePool, config.DATABASE_POOLER),
    filesPool,
    redis,
    queue,
    webhookQueue,
    storage,
    vault,
    erasedForm: createErasedForm(config.SECRET),
    keys,
    spamFilter: spamFilterFromConfig(config),
    log,
  };
  // Koa's handler catches its own errors: the promise it returns never rejects.
  const handleRequest = createApp(deps).callback();
  const server = createServer(
    {
      headersTimeout: config.HTTP_HEADERS_TIMEOUT_MS,
      requestTimeout: config.HTTP_REQUEST_TIMEOUT_MS,
      // Behind a load balancer this must outlast its idle timeout (60 s on AWS ALB).
      keepAliveTimeout: config.HTTP_KEEP_ALIVE_TIMEOUT_MS,
      // How often Node checks the two timeouts above (its default is every 30 s).
      connectionsCheckingInterval: Math.min(1_000, Math.max(50, Math.floor(config.HTTP_HEADERS_TIMEOUT_MS / 4))),
    },
    (req, res) => void handleRequest(req, res),
  );
  capConnectionsPerIp(server, config.CONNECTIONS_PER_IP, (address) => rateLimitSubject(address, config.RATE_LIMIT_IPV6_PREFIX));
  server.on('request', (req: IncomingMessage) =>
    watchBodyProgress(req, {
      idleMs: config.BODY_IDLE_TIMEOUT_MS,
      minBytesPerSecond: config.BODY_MIN_BYTES_PER_SECOND,
      // No URL: a path may carry a key (PATCH /admin/keys/:key).
      onAbort: () => log.info({ method: req.method }, 'request body stalled: connection closed'),
    }),
  );
  // Registered last, so closed first: no new request reaches clients that are closing.
  shutdown.add(
    'http',
    server,
    (server) =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
  );
  server.listen(config.PORT, config.HOST);
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const url = config.PORT === port ? config.PUBLIC_URL : `http://127.0.0.1:${port}`;
  log.info({ url, port, host: config.HOST, version: buildInfo().version }, 'api listening');
  return { server, url, deps, shutdown };
}
