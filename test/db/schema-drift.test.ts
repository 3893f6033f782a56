// The entities and the migrations describe the same schema: on a database built by the migrations,
// the schema generator finds nothing to change. Otherwise `npm run migration:create` would write a
// migration that nobody asked for (dropping the hand-written triggers and functions, for one).
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { createOrm, migrate, type MikroORM } from '../../src/shared/db/orm.ts';
import { withDatabase } from '../support/harness.ts';

const database = `cfs_drift_${Date.now()}`;
let orm: MikroORM;

async function admin(text: string) {
  const client = new pg.Client({ connectionString: inject('postgresUrl') });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

beforeAll(async () => {
  await admin(`CREATE DATABASE ${database}`);
  orm = await createOrm(withDatabase(inject('postgresUrl'), database), 2);
  await migrate(orm);
});
afterAll(async () => {
  await orm?.close();
  await admin(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
});

describe('schema drift', () => {
  it('leaves nothing for a new migration: the entities match what the migrations build', async () => {
    const diff = await orm.schema.getUpdateSchemaSQL({ wrap: false });
    expect(diff.trim()).toBe('');
  });
});
