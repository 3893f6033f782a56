// `npm run migrate`: applies pending migrations to DATABASE_URL (docker-compose runs it once before the API).
import { exitOnConfigError, loadConfigSubset } from '../shared/infra/config.ts';
import { createOrm, migrate } from '../shared/infra/db/orm.ts';
import { entities } from '../shared/schema.ts';
import { LONG_OPERATION_TIMEOUTS } from '../shared/infra/db/pg-pool.ts';

const config = exitOnConfigError(() => loadConfigSubset(['DATABASE_URL']));
// A migration may build an index over the whole table: no statement bound (docs/upgrading.md).
const orm = await createOrm(config.DATABASE_URL, entities, 2, { timeouts: LONG_OPERATION_TIMEOUTS });
try {
  const applied = await migrate(orm);
  process.stdout.write(applied.length ? `Applied: ${applied.join(', ')}\n` : 'No pending migrations.\n');
} finally {
  await orm.close();
}
