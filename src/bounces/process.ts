// Builds a bounce receiver process from a config: a small PostgreSQL pool, the webhook queue (for
// `submission.bounced`), the SMTP server and, when asked, its metrics, each registered for an
// ordered shutdown. Used by `start:bounces`, `npm start` and the tests.
import type { AddressInfo } from 'node:net';
import type { Config } from '../shared/infra/config.ts';
import { configuredTimeouts, createPgPool } from '../shared/infra/db/pg-pool.ts';
import type { Logger } from '../shared/infra/log.ts';
import { serveMetrics } from '../shared/infra/metrics-server.ts';
import { closeRedis, createRedis, redisTopology } from '../shared/infra/queues/redis.ts';
import { createWebhookQueue, enqueueDeliveries } from '../shared/infra/queues/queues.ts';
import { webhookJob, type DeliveryJob } from '../shared/deliveries/delivery-jobs.ts';
import { createReturnPaths } from '../shared/bounces/return-path.ts';
import { checkSecretAtStart } from '../shared/infra/secret-check.ts';
import { Shutdown } from '../shared/infra/shutdown.ts';
import { startReceiver } from './receiver.ts';

/** Connections to PostgreSQL: each report holds one for its short transaction. */
const POOL_SIZE = 8;

/** `metricsPort`: where its metrics are served, when BOUNCE_METRICS_PORT is set. */
export type BounceProcess = { port: number; metricsPort?: number; shutdown: Shutdown };

export async function startBounceReceiver(config: Config & { BOUNCE_DOMAIN: string }, log: Logger): Promise<BounceProcess> {
  const shutdown = new Shutdown(log);
  // First, before anything is opened: return paths are signed under SECRET, and another one than
  // the data's would refuse every bounce.
  const secretCheck = await checkSecretAtStart(config.DATABASE_URL, config.SECRET, log, (error) => {
    log.fatal(error.message);
    shutdown.exitWith(78);
  });
  shutdown.add('secret check', secretCheck, (check) => check.stop());
  const pool = shutdown.add(
    'postgres',
    createPgPool(config.DATABASE_URL, POOL_SIZE, configuredTimeouts(config, 'request'), { pooler: config.DATABASE_POOLER }),
    (pool) => pool.end(),
  );
  const redis = shutdown.add('redis', createRedis(config.REDIS_URL, 'producer', redisTopology(config)), closeRedis);
  redis.on('error', (error) => log.debug({ err: error }, 'redis error'));
  const webhooks = shutdown.add('webhook queue', createWebhookQueue<DeliveryJob>(redis, config.QUEUE_PREFIX), (queue) => queue.close());
  webhooks.on('error', (error) => log.debug({ err: error }, 'webhook queue error'));
  let metricsPort: number | undefined;
  if (config.BOUNCE_METRICS_PORT !== undefined && config.ADMIN_TOKEN !== undefined) {
    const metrics = await serveMetrics(config.HOST, config.BOUNCE_METRICS_PORT, config.ADMIN_TOKEN);
    shutdown.add('metrics', metrics, (server) => new Promise((resolve) => server.close(resolve)));
    metricsPort = (metrics.address() as AddressInfo).port;
    log.info({ port: metricsPort }, 'bounce receiver metrics listening');
  }
  const receiver = await startReceiver(
    {
      host: config.BOUNCE_SMTP_HOST,
      port: config.BOUNCE_SMTP_PORT,
      maxBytes: config.BOUNCE_MAX_BYTES,
      maxConnectionsPerIp: config.BOUNCE_MAX_CONNECTIONS_PER_IP,
      messagesPerMinutePerIp: config.BOUNCE_MESSAGES_PER_MINUTE_PER_IP,
      tls: config.BOUNCE_TLS_CERT && config.BOUNCE_TLS_KEY ? { certFile: config.BOUNCE_TLS_CERT, keyFile: config.BOUNCE_TLS_KEY } : undefined,
      suppression: { afterHardBounces: config.SUPPRESS_AFTER_HARD_BOUNCES, forHours: config.SUPPRESS_FOR_HOURS },
    },
    {
      pool,
      returnPaths: createReturnPaths(config.SECRET, config.BOUNCE_DOMAIN),
      enqueueWebhooks: (ids) =>
        enqueueDeliveries(
          webhooks,
          ids.map((id) => webhookJob(id)),
        ),
      log,
    },
  );
  // Registered last, so closed first: no new report is taken before the pool goes.
  shutdown.add('smtp server', receiver, (receiver) => receiver.close());
  log.info({ host: config.BOUNCE_SMTP_HOST, port: receiver.port, domain: config.BOUNCE_DOMAIN }, 'bounce receiver ready');
  return { port: receiver.port, ...(metricsPort === undefined ? {} : { metricsPort }), shutdown };
}
