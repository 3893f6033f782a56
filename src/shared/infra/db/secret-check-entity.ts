// The table that tells whether a process has the SECRET the data was written with.
import { defineEntity, p } from '@mikro-orm/core';

/**
 * The one row (id 1) that tells whether this process has the SECRET the data was written with: a
 * known text sealed under it by the first process that started (src/shared/infra/secret-check.ts).
 */
export const SecretCheckSchema = defineEntity({
  name: 'SecretCheck',
  tableName: 'secret_check',
  properties: {
    id: p.integer().primary().autoincrement(false),
    sealed: p.text(),
    writtenAt: p.datetime().defaultRaw('now()'),
  },
});
