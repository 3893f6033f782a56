// A database of its own for a test file that runs the migrations itself: empty (no migration
// applied) or a copy of the migrated template, with an ORM on it; dropped after the file.
import { afterAll, beforeAll } from 'vitest';
import { createOrm, type MikroORM } from '../../src/shared/infra/db/orm.ts';
import { entities } from '../../src/shared/schema.ts';
import { testDatabase } from './harness.ts';

/** Registers the file's setup and teardown; call `orm()` inside tests. */
export function ormOnOwnDatabase(options: { migrated: boolean }): { orm: () => MikroORM } {
  let database: Awaited<ReturnType<typeof testDatabase>> | undefined;
  let orm: MikroORM | undefined;
  beforeAll(async () => {
    database = await testDatabase(options);
    orm = await createOrm(database.url, entities, 2);
  });
  afterAll(async () => {
    await orm?.close();
    await database?.drop();
  });
  return {
    orm: () => {
      if (!orm) throw new Error('the database is not set up yet');
      return orm;
    },
  };
}
