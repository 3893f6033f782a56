// `npm run migration:create -- <name>`: writes a migration for the difference between the entities
// and the schema the existing migrations build, using a throwaway local PostgreSQL.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startPostgres } from '../local/services.ts';
import { createOrm, migrate } from '../shared/infra/db/orm.ts';
import { entities } from '../shared/schema.ts';

const name = process.argv[2];
if (!name || !/^[a-z0-9_]+$/.test(name)) {
  process.stderr.write('Usage: npm run migration:create -- <name_in_snake_case>\n');
  process.exit(2);
}
const dir = await mkdtemp(path.join(tmpdir(), 'cfs-migration-'));
const postgres = await startPostgres({ dir: path.join(dir, 'data'), persistent: false });
try {
  const orm = await createOrm(postgres.url, entities, 2);
  await migrate(orm);
  const created = await orm.migrator.create(undefined, false, false, name);
  process.stdout.write(created.diff.up.length ? `Created ${created.fileName}\n` : 'No schema difference.\n');
  await orm.close();
} finally {
  await postgres.stop();
  await rm(dir, { recursive: true, force: true });
}
