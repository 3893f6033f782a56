// `npm run admin -- visitor export|erase <address>`: a visitor's data on request (docs/operations.md,
// "A visitor's data on request"). Synchronous, in batches; progress on stderr, the result on stdout.
import { createWriteStream } from 'node:fs';
import { finished } from 'node:stream/promises';
import type { Writable } from 'node:stream';
import * as v from 'valibot';
import { ConfigError, exitOnConfigError, loadConfigSubset } from '../shared/infra/config.ts';
import { createOrm } from '../shared/infra/db/orm.ts';
import { configuredTimeouts } from '../shared/infra/db/pg-pool.ts';
import { createDeliveryQueue, createWebhookQueue } from '../shared/infra/queues/queues.ts';
import { closeRedis, createRedis, redisTopology } from '../shared/infra/queues/redis.ts';
import { checkSecret } from '../shared/infra/secret-check.ts';
import { createErasedForm } from '../shared/infra/secrets.ts';
import { createStorage } from '../shared/infra/storage.ts';
import { entities } from '../shared/schema.ts';
import { eraseVisitor, exportVisitor, type VisitorDeps } from '../shared/visitors/visitors.ts';

export const VISITOR_USAGE = `  visitor export <address> [--out FILE]
                                    everything stored about the address, as one JSON document (files in base64)
                                    on stdout or in FILE
  visitor erase <address>           deletes it, in batches; keeps its suppression and the last 24 hours' bounds
                                    as a hash of the address (needs S3 and Redis settings too)`;

const Address = v.pipe(v.string(), v.trim(), v.maxLength(254), v.email());

/** Exit code: 0 done, 1 refused, 2 usage, 78 configuration. */
export async function visitor(command: string | undefined, args: string[], usage: string): Promise<number> {
  const [address, flag, file, ...extra] = args;
  const out = flag === '--out' ? file : undefined;
  const wellFormed = (command === 'export' && (flag === undefined || (out !== undefined && !extra.length))) || (command === 'erase' && flag === undefined);
  if (!address || !wellFormed) {
    process.stderr.write(`${usage}\n`);
    return 2;
  }
  if (!v.is(Address, address)) {
    process.stderr.write(`Not an email address: ${JSON.stringify(String(address).slice(0, 100))}.\n`);
    return 1;
  }
  const config = exitOnConfigError(() =>
    loadConfigSubset([
      'DATABASE_URL',
      'DATABASE_POOLER',
      'SECRET',
      'REDIS_URL',
      'REDIS_CLUSTER',
      'REDIS_SENTINELS',
      'REDIS_SENTINEL_MASTER',
      'REDIS_SENTINEL_PASSWORD',
      'QUEUE_PREFIX',
      'S3_ENDPOINT',
      'S3_PUBLIC_ENDPOINT',
      'S3_REGION',
      'S3_BUCKET',
      'S3_ACCESS_KEY_ID',
      'S3_SECRET_ACCESS_KEY',
      'S3_FORCE_PATH_STYLE',
      'PG_STATEMENT_TIMEOUT_MS',
      'PG_IDLE_IN_TRANSACTION_TIMEOUT_MS',
    ]),
  );
  // The erased forms are made under SECRET: under another one, a kept suppression would never match again.
  try {
    await checkSecret(config.DATABASE_URL, config.SECRET);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${error.message}\n`);
    return 78;
  }
  const orm = await createOrm(config.DATABASE_URL, entities, 2, { timeouts: configuredTimeouts(config, 'request'), pooler: config.DATABASE_POOLER });
  const redis = createRedis(config.REDIS_URL, 'producer', redisTopology(config));
  const queues = [createDeliveryQueue(redis, config), createWebhookQueue(redis, config.QUEUE_PREFIX)];
  const storage = createStorage(config);
  const deps: VisitorDeps = { em: orm.em.fork(), storage, queues, erasedForm: createErasedForm(config.SECRET) };
  try {
    if (command === 'export') {
      const target: Writable = out === undefined ? process.stdout : createWriteStream(out, { mode: 0o600 });
      const counted = await exportVisitor(deps, address, target);
      if (target !== process.stdout) {
        target.end();
        await finished(target);
      }
      process.stderr.write(`exported ${counted.submissions} submissions, ${counted.files} files, ${counted.jobs} queued jobs\n`);
      return 0;
    }
    const summary = await eraseVisitor(deps, address, (step) =>
      process.stderr.write(`${step.step}: ${step.done}${step.total === undefined ? '' : ` of ${step.total}`}\n`),
    );
    process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
    if (summary.keys_owned) {
      process.stderr.write(`The address owns ${summary.keys_owned} key(s): its account (keys, their emails, its suppression and consent) was left as it is.\n`);
    }
    return 0;
  } finally {
    await Promise.all(queues.map((queue) => queue.close()));
    await closeRedis(redis);
    storage.close();
    await orm.close();
  }
}
