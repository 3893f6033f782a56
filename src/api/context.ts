// What every request handler can reach: the services built once at start.
import type { SpamFilter } from '../shared/spam/spam-filter.ts';
import type { RouterContext } from '@koa/router';
import type { ParameterizedContext } from 'koa';
import type { Queue } from 'bullmq';
import type { RedisClient } from '../shared/infra/queues/redis.ts';
import type { MikroORM } from '../shared/infra/db/orm.ts';
import type { StatementRunner } from '../shared/infra/db/pg-pool.ts';
import type { Config } from '../shared/infra/config.ts';
import type { Logger } from '../shared/infra/log.ts';
import type { DeliveryJob } from '../shared/deliveries/delivery-jobs.ts';
import type { KeyVault } from '../shared/infra/secrets.ts';
import type { Storage } from '../shared/infra/storage.ts';
import type { KeyCache } from './submissions/key-cache.ts';
import type { EntityManager } from '@mikro-orm/postgresql';
import type pg from 'pg';

export type AppDeps = {
  config: Config;
  orm: MikroORM;
  /** The submissions' group commit's INSERTs: a pool of their own, its statements named unless behind a transaction pooler. */
  intakePool: StatementRunner;
  /** The writes of submissions with files, each a transaction of two round trips (src/api/submissions/store.ts): a pool of their own. */
  filesPool: pg.Pool;
  redis: RedisClient;
  /** The email deliveries. */
  queue: Queue<DeliveryJob>;
  webhookQueue: Queue<DeliveryJob>;
  storage: Storage;
  vault: KeyVault;
  /** An erased address's form (src/shared/infra/secrets.ts createErasedForm): what the bounds still count it by. */
  erasedForm: (value: string) => string;
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
  /** The request's unit of work (middleware/request-em.ts). */
  em: EntityManager;
  /** Set on page routes (refusalsAsPage): the view a refusal is answered with. */
  errorPage?: string;
};

export type AppContext = ParameterizedContext<AppState>;

/** A route's context: AppContext with the path's parameters, as strings, in ctx.params. */
export type RouteContext = RouterContext<AppState>;
