// The entities and the migrations describe the same schema: on a database built by the migrations,
// the schema generator finds nothing to change. Otherwise `npm run migration:create` would write a
// migration that nobody asked for (dropping the hand-written triggers and functions, for one).
import { describe, expect, it } from 'vitest';
import { ormOnOwnDatabase } from '../support/migration-database.ts';

// A copy of the template that the global setup built with the migrations.
const { orm } = ormOnOwnDatabase({ migrated: true });

describe('schema drift', () => {
  it('leaves nothing for a new migration: the entities match what the migrations build', async () => {
    const diff = await orm().schema.getUpdateSchemaSQL({ wrap: false });
    expect(diff.trim()).toBe('');
  });
});
