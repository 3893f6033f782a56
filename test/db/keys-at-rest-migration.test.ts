// The keys-at-rest migration converts keys stored in plain text by the earlier schema.
import { describe, expect, it } from 'vitest';
import { createKeyVault } from '../../src/shared/infra/secrets.ts';
import { ormOnOwnDatabase } from '../support/migration-database.ts';

const SECRET = 'migration-test-secret-0123456789abcdef';
// Empty: the test runs the migrations up to the one before the conversion itself.
const { orm } = ormOnOwnDatabase({ migrated: false });

describe('keys-at-rest migration', () => {
  it('replaces plain keys by their HMAC and a sealed copy that opens to the same key', async () => {
    await orm().migrator.up({ to: 'Migration20261121055329_key_emails' });
    const em = orm().em.fork();
    await em.execute(
      `insert into verification_keys (id, key, email) values
         (gen_random_uuid(), 'plain-key-one', 'a@example.test'), (gen_random_uuid(), 'plain-key-two', 'b@example.test')`,
    );

    const previous = process.env.SECRET;
    process.env.SECRET = SECRET;
    try {
      await orm().migrator.up();
    } finally {
      if (previous === undefined) delete process.env.SECRET;
      else process.env.SECRET = previous;
    }

    const vault = createKeyVault(SECRET);
    const rows = await em.execute<Array<Record<string, string>>>('select * from verification_keys order by email');
    expect(rows.map((row) => row.key_hash)).toEqual([vault.hash('plain-key-one'), vault.hash('plain-key-two')]);
    expect(rows.map((row) => vault.decrypt(row.key_encrypted!))).toEqual(['plain-key-one', 'plain-key-two']);
    expect(rows.every((row) => !('key' in row))).toBe(true);
    expect(JSON.stringify(rows)).not.toContain('plain-key');
  });
});
