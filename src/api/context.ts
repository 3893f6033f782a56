// What every request handler can reach: the services built once at start.
import type { SpamFilter } from '../shared/spam-filter.ts';
import type { ParameterizedContext } from 'koa';
import type { Queue } from 'bullmq';
import type { RedisClient } from '../shared/queue.ts';
import type { MikroORM } from '../shared/db/orm.ts';
import type { Config } from '../shared/config.ts';
import type { Logger } from '../shared/log.ts';
import type { DeliveryJob } from '../shared/queue.ts';
import type { KeyVault } from '../shared/secrets.ts';
import type { Storage } from '../shared/storage.ts';
import type { KeyCache } from './submissions/key-cache.ts';

export type AppDeps = {
  config: Config;
  orm: MikroORM;
  redis: RedisClient;
  /** The email deliveries. */
  queue: Queue<DeliveryJob>;
  webhookQueue: Queue<DeliveryJob>;
  storage: Storage;
  vault: KeyVault;
  /** The active keys, cached (src/api/submissions/key-cache.ts). */
  keys: KeyCache;
  /** Taught the owners' marks; undefined when SPAM_FILTER=off or no rspamd is named. */
  spamFilter: SpamFilter | undefined;
  log: Logger;
};

export type AppState = {
  requestId: string;
  log: Logger;
  /** The client's address: the socket's, or X-Forwarded-For's through trusted proxies. */
  clientIp: string;
};

export type AppContext = ParameterizedContext<AppState>;
