// `npm run migrate`: applies pending migrations to DATABASE_DIRECT_URL, else DATABASE_URL (docker-compose
// runs it once before the API). Never through a transaction pooler: the migration lock is held by a session.
import { ConfigError, exitOnConfigError, loadConfigSubset } from '../shared/infra/config.ts';
import { createOrm, migrate } from '../shared/infra/db/orm.ts';
import { entities } from '../shared/schema.ts';
import { LONG_OPERATION_TIMEOUTS } from '../shared/infra/db/pg-pool.ts';

const config = exitOnConfigError(() => {
  const settings = loadConfigSubset(['DATABASE_URL', 'DATABASE_DIRECT_URL', 'DATABASE_POOLER']);
  if (settings.DATABASE_POOLER === 'transaction' && !settings.DATABASE_DIRECT_URL) {
    throw new ConfigError(
      'Invalid configuration:\n  DATABASE_POOLER, DATABASE_DIRECT_URL: with DATABASE_POOLER=transaction, set DATABASE_DIRECT_URL to PostgreSQL itself (the migration lock needs a session of its own, which the pooler does not keep)',
    );
  }
  return settings;
});
// A migration may build an index over the whole table: no statement bound (docs/upgrading.md).
const orm = await createOrm(config.DATABASE_DIRECT_URL ?? config.DATABASE_URL, entities, 2, { timeouts: LONG_OPERATION_TIMEOUTS });
try {
  const applied = await migrate(orm);
  process.stdout.write(applied.length ? `Applied: ${applied.join(', ')}\n` : 'No pending migrations.\n');
} finally {
  await orm.close();
}
