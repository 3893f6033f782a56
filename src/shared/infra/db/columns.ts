// Column shapes several tables share; each feature's entities (src/shared/<feature>/entities.ts) use them.
import { p } from '@mikro-orm/core';

/** When the row was made: set by PostgreSQL for rows inserted in SQL, and by the ORM for its own. */
export const createdAt = () =>
  p
    .datetime()
    .defaultRaw('now()')
    .onCreate(() => new Date());
