// `npm run migrate`: applies pending migrations to DATABASE_DIRECT_URL, else DATABASE_URL (docker-compose
// runs it once before the API). Never through a transaction pooler: the migration lock is held by a session.
// With neither set, the database of npm start's DATA_DIR, as `npm run backup` finds it: its running
// PostgreSQL, or one started here for the while (npm start also migrates by itself at each start).
import { ConfigError, exitOnConfigError, loadConfigSubset } from '../shared/infra/config.ts';
import { createOrm, migrate } from '../shared/infra/db/orm.ts';
import { entities } from '../shared/schema.ts';
import { LONG_OPERATION_TIMEOUTS } from '../shared/infra/db/pg-pool.ts';

const set = (name: string) => Boolean(process.env[name]?.trim());
const external = set('DATABASE_URL') || set('DATABASE_DIRECT_URL');

const config = exitOnConfigError(() => {
  if (!external) return { ...loadConfigSubset(['DATA_DIR']), DATABASE_URL: undefined, DATABASE_DIRECT_URL: undefined };
  const settings = loadConfigSubset(['DATABASE_URL', 'DATABASE_DIRECT_URL', 'DATABASE_POOLER']);
  if (settings.DATABASE_POOLER === 'transaction' && !settings.DATABASE_DIRECT_URL) {
    throw new ConfigError(
      'Invalid configuration:\n  DATABASE_POOLER, DATABASE_DIRECT_URL: with DATABASE_POOLER=transaction, set DATABASE_DIRECT_URL to PostgreSQL itself (the migration lock needs a session of its own, which the pooler does not keep)',
    );
  }
  return { ...settings, DATA_DIR: undefined };
});

const stops: Array<() => Promise<void>> = [];
let url = config.DATABASE_DIRECT_URL ?? config.DATABASE_URL;
if (!url) {
  const path = await import('node:path');
  const { hasCluster, localPaths, runningPostgres, startLocalPostgres } = await import('../local/data-dir.ts');
  const dataDir = path.resolve(config.DATA_DIR!);
  if (!hasCluster(dataDir)) {
    process.stderr.write(
      `DATABASE_URL: is required; or DATA_DIR: ${dataDir} has no database of npm start (${localPaths(dataDir).postgres}).\n` +
        'Set DATA_DIR to the directory npm start uses (npm start also migrates by itself), or DATABASE_URL for an external PostgreSQL.\n',
    );
    process.exit(78);
  }
  url = runningPostgres(dataDir)?.url;
  if (!url) {
    const postgres = await startLocalPostgres(dataDir);
    stops.push(postgres.stop);
    url = postgres.url;
  }
}

try {
  // A migration may build an index over the whole table: no statement bound (docs/upgrading.md).
  const orm = await createOrm(url, entities, 2, { timeouts: LONG_OPERATION_TIMEOUTS });
  try {
    const applied = await migrate(orm);
    process.stdout.write(applied.length ? `Applied: ${applied.join(', ')}\n` : 'No pending migrations.\n');
  } finally {
    await orm.close();
  }
} finally {
  for (const stop of stops) await stop();
}
