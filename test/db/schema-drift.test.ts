// The entities and the migrations describe the same schema: on a database built by the migrations,
// the schema generator finds nothing to change. Otherwise `npm run migration:create` would write a
// migration that nobody asked for (dropping the hand-written triggers and functions, for one).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrm, type MikroORM } from '../../src/shared/db/orm.ts';
import { testDatabase } from '../support/harness.ts';

let database: Awaited<ReturnType<typeof testDatabase>>;
let orm: MikroORM;

beforeAll(async () => {
  // A copy of the template that the global setup built with the migrations.
  database = await testDatabase({ migrated: true });
  orm = await createOrm(database.url, 2);
});
afterAll(async () => {
  await orm?.close();
  await database?.drop();
});

describe('schema drift', () => {
  it('leaves nothing for a new migration: the entities match what the migrations build', async () => {
    const diff = await orm.schema.getUpdateSchemaSQL({ wrap: false });
    expect(diff.trim()).toBe('');
  });
});
