// `npm run admin -- <command>`: operator commands over the same key rules as the API.
// Needs DATABASE_URL and SECRET (and WEBHOOK_ALLOW, when adding a webhook, as the API reads it);
// `visitor export|erase` needs DATABASE_URL, SECRET, the Redis and the S3 settings;
// `deliveries flush` needs DATABASE_URL and REDIS_URL (and QUEUE_PREFIX, REDIS_CLUSTER or the REDIS_SENTINEL settings as set for the workers).
import { parseAllowList, type AddressPolicy } from '../shared/webhooks/address-guard.ts';
import { ConfigError, exitOnConfigError, loadConfigSubset } from '../shared/infra/config.ts';
import type { VerificationKey } from '../shared/keys/entities.ts';
import { createOrm } from '../shared/infra/db/orm.ts';
import { entities } from '../shared/schema.ts';
import { configuredTimeouts } from '../shared/infra/db/pg-pool.ts';
import { KEY_UNAVAILABLE, KeyRuleError, listKeys, parseDomains, updateKey } from '../shared/keys/keys.ts';
import { createKeyVault, type KeyVault } from '../shared/infra/secrets.ts';
import { adoptSecret, checkSecret, LOST_SECRET_DOC, unreadableUnder } from '../shared/infra/secret-check.ts';
import {
  createEndpoint,
  keyIdByValue,
  parseWebhookUrl,
  deleteEndpoint,
  listEndpoints,
  setEndpointEnabled,
  type EndpointRecord,
  listWebhookDeliveries,
} from '../shared/webhooks/webhooks.ts';
import type { EntityManager } from '@mikro-orm/postgresql';
import { closeRedis, createRedis, redisTopology } from '../shared/infra/queues/redis.ts';
import { createDeliveryQueue } from '../shared/infra/queues/queues.ts';
import { flushRetries } from '../shared/deliveries/retry-flush.ts';
import type { DeliveryJob } from '../shared/deliveries/delivery-jobs.ts';
import { buildInfo } from '../shared/infra/version.ts';
import { visitor, VISITOR_USAGE } from './admin-visitor.ts';

const plural = (count: number, word: string) => `${count} ${word}${count === 1 ? '' : 's'}`;

const USAGE = `Usage: npm run admin -- <command>
  version                           this code's version and commit
  keys list <email>                 the address's keys and their states
  keys disable <key>                active → disabled
  keys enable <key>                 disabled → active
  keys delete <key>                 active or disabled → deleted (final)
  keys domains <key> [domain ...]   restrict the key to these domains (none: no restriction)
  webhooks list <key>               the key's webhook endpoints
  webhooks add <key> <url>          add an endpoint; prints its signing secret, this once
  webhooks enable|disable <key> <id>
  webhooks delete <key> <id>
  webhooks deliveries <key>         the key's latest webhook deliveries
  deliveries flush [--per-second N] the emails waiting on a retry timer, tried now, at most N a second
                                    (default RETRY_FLUSH_PER_SECOND, 10)
  secret adopt [--yes]              only when the SECRET the data was written with is lost for good:
                                    the database takes this SECRET from now on (${LOST_SECRET_DOC});
                                    without --yes, says what would become unreadable and changes nothing
${VISITOR_USAGE}`;

const describe = (key: VerificationKey, vault: KeyVault) =>
  [
    vault.tryDecrypt(key.keyEncrypted) ?? `(${KEY_UNAVAILABLE})`,
    key.status.padEnd(8),
    key.useDomain ? key.domains.join(',') : '(any domain)',
    key.createdAt.toISOString(),
  ].join('  ');

async function run(args: string[]): Promise<number> {
  const [group, command, target, ...rest] = args;
  if (group === 'version' && command === undefined) {
    const { version, commit } = buildInfo();
    process.stdout.write(`${version} (commit ${commit})\n`);
    return 0;
  }
  if (group === 'deliveries')
    return deliveries(
      command,
      [target, ...rest].filter((arg) => arg !== undefined),
    );
  if (group === 'visitor')
    return visitor(
      command,
      [target, ...rest].filter((arg) => arg !== undefined),
      USAGE,
    );
  if (group === 'secret' && command === 'adopt' && (!target || target === '--yes') && !rest.length) return adopt(target === '--yes');
  if ((group !== 'keys' && group !== 'webhooks') || !command || !target) {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  const config = exitOnConfigError(() =>
    loadConfigSubset(['DATABASE_URL', 'DATABASE_POOLER', 'SECRET', 'WEBHOOK_ALLOW', 'PG_STATEMENT_TIMEOUT_MS', 'PG_IDLE_IN_TRANSACTION_TIMEOUT_MS']),
  );
  // As every process: with another SECRET than the data's, each key would be "unknown".
  try {
    await checkSecret(config.DATABASE_URL, config.SECRET);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${error.message}\n`);
    return 78;
  }
  const vault = createKeyVault(config.SECRET);
  const orm = await createOrm(config.DATABASE_URL, entities, 2, { timeouts: configuredTimeouts(config, 'request'), pooler: config.DATABASE_POOLER });
  const em = orm.em.fork();
  try {
    if (group === 'webhooks') return await webhooks(em, vault, parseAllowList(config.WEBHOOK_ALLOW), command, target, rest);
    switch (command) {
      case 'list': {
        const keys = await listKeys(em, target);
        process.stdout.write(keys.length ? `${keys.map((key) => describe(key, vault)).join('\n')}\n` : `No keys for ${target}.\n`);
        return 0;
      }
      case 'disable':
      case 'enable':
      case 'delete': {
        const status = ({ disable: 'disabled', enable: 'active', delete: 'deleted' } as const)[command];
        process.stdout.write(`${describe(await updateKey(em, vault.hash(target), { status }), vault)}\n`);
        return 0;
      }
      case 'domains': {
        const key = await updateKey(em, vault.hash(target), { domains: parseDomains(rest), useDomain: rest.length > 0 });
        process.stdout.write(`${describe(key, vault)}\n`);
        return 0;
      }
      default:
        process.stderr.write(`${USAGE}\n`);
        return 2;
    }
  } catch (error) {
    if (!(error instanceof KeyRuleError)) throw error;
    process.stderr.write(`${error.message}\n`);
    return 1;
  } finally {
    await orm.close();
  }
}

async function webhooks(em: EntityManager, vault: KeyVault, webhookPolicy: AddressPolicy, command: string, keyValue: string, rest: string[]): Promise<number> {
  const keyId = await keyIdByValue(em, vault, keyValue);
  const [argument] = rest;
  const line = (endpoint: EndpointRecord) =>
    [
      endpoint.id,
      endpoint.kind,
      endpoint.enabled ? 'enabled ' : 'disabled',
      `failed-in-a-row=${endpoint.consecutive_failures}`,
      endpoint.url,
      ...(endpoint.chat_id ? [`chat=${endpoint.chat_id}`] : []),
    ].join('  ');
  switch (command) {
    case 'list': {
      const endpoints = await listEndpoints(em, keyId);
      process.stdout.write(endpoints.length ? `${endpoints.map(line).join('\n')}\n` : 'No webhooks.\n');
      return 0;
    }
    case 'add': {
      const created = await createEndpoint(em, vault, keyId, parseWebhookUrl(argument ?? '', webhookPolicy));
      process.stdout.write(`${line(created.endpoint)}\nsecret (shown once): ${created.secret}\n`);
      return 0;
    }
    case 'enable':
    case 'disable':
    case 'delete': {
      const id = argument ?? '';
      const done =
        /^[0-9a-f-]{36}$/i.test(id) &&
        (command === 'delete' ? await deleteEndpoint(em, keyId, id) : await setEndpointEnabled(em, keyId, id, command === 'enable'));
      if (!done) throw new KeyRuleError('not_found', 'id', 'Unknown webhook.');
      process.stdout.write(`${command}d ${id}\n`);
      return 0;
    }
    case 'deliveries': {
      const deliveries = await listWebhookDeliveries(em, { keyId, limit: 50 });
      const text = deliveries.map((d) =>
        [d.created_at, d.status.padEnd(8), `attempts=${d.attempts}`, `code=${d.last_response_code ?? '-'}`, d.url, d.last_error ?? ''].join('  '),
      );
      process.stdout.write(text.length ? `${text.join('\n')}\n` : 'No deliveries.\n');
      return 0;
    }
    default:
      process.stderr.write(`${USAGE}\n`);
      return 2;
  }
}

/** `deliveries flush`: what POST /admin/deliveries/flush does, from a shell. */
async function deliveries(command: string | undefined, args: string[]): Promise<number> {
  const perSecondArg = args[0] === '--per-second' ? args[1] : undefined;
  if (command !== 'flush' || (args.length > 0 && (args.length !== 2 || perSecondArg === undefined))) {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  if (perSecondArg !== undefined && !(/^\d+$/.test(perSecondArg) && Number(perSecondArg) >= 1 && Number(perSecondArg) <= 10_000)) {
    process.stderr.write('--per-second: give a whole number from 1 to 10000.\n');
    return 2;
  }
  const config = exitOnConfigError(() =>
    loadConfigSubset(
      [
        'DATABASE_URL',
        'DATABASE_POOLER',
        'REDIS_URL',
        'REDIS_CLUSTER',
        'REDIS_SENTINELS',
        'REDIS_SENTINEL_MASTER',
        'REDIS_SENTINEL_PASSWORD',
        'QUEUE_PREFIX',
        'RETRY_FLUSH_PER_SECOND',
        'PG_STATEMENT_TIMEOUT_MS',
        'PG_IDLE_IN_TRANSACTION_TIMEOUT_MS',
      ],
      {
        ...process.env,
        ...(perSecondArg === undefined ? {} : { RETRY_FLUSH_PER_SECOND: perSecondArg }),
      },
    ),
  );
  const orm = await createOrm(config.DATABASE_URL, entities, 2, { timeouts: configuredTimeouts(config, 'request'), pooler: config.DATABASE_POOLER });
  const redis = createRedis(config.REDIS_URL, 'producer', redisTopology(config));
  const queue = createDeliveryQueue<DeliveryJob>(redis, config);
  try {
    const flushed = await flushRetries({ queue, redis, em: orm.em.fork() }, config.RETRY_FLUSH_PER_SECOND);
    process.stdout.write(
      `promoted ${flushed.promoted} now, ${flushed.scheduled} brought forward (${flushed.per_second} a second` +
        `${flushed.last_at ? `, the last at ${flushed.last_at}` : ''}), ${flushed.unchanged} due sooner anyway\n`,
    );
    return 0;
  } finally {
    await queue.close();
    await closeRedis(redis);
    await orm.close();
  }
}

/**
 * `secret adopt`: writes the check value under this SECRET, for a database whose own SECRET is lost.
 * It cannot be undone without the old SECRET, so it says first what it leaves unreadable, and acts
 * only with --yes.
 */
async function adopt(confirmed: boolean): Promise<number> {
  const config = exitOnConfigError(() => loadConfigSubset(['DATABASE_URL', 'SECRET']));
  try {
    const lost = await unreadableUnder(config.DATABASE_URL, config.SECRET);
    process.stdout.write(
      `Under this SECRET, ${plural(lost.keys, 'key')} and ${plural(lost.webhooks, 'webhook endpoint')} ` +
        `(out of ${lost.total} in use) are sealed under another one and cannot be read.\n`,
    );
    if (!confirmed) {
      process.stdout.write(
        [
          'Nothing was changed. Adopt this SECRET only when the one the data was written with is lost for good:',
          'those keys would answer 403, and those endpoints be added again. To go on: npm run admin -- secret adopt --yes',
          '',
        ].join('\n'),
      );
      return 1;
    }
    await adoptSecret(config.DATABASE_URL, config.SECRET);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${error.message}\n`);
    return 78;
  }
  process.stdout.write(
    [
      'The database now takes this SECRET: the service starts with it.',
      'What was sealed under the old one is not rewritten and stays unreadable: those keys answer 403 and show as unavailable',
      '(their owners request new ones on the start page), their webhook endpoints must be added again, and open sign-in links no longer work.',
      '',
    ].join('\n'),
  );
  return 0;
}

process.exitCode = await run(process.argv.slice(2));
