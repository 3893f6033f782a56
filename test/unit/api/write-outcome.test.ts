// Which failed writes of a submission may still have committed (src/api/submissions/store.ts): those
// are settled with PostgreSQL before the request is answered; the others are answered at once.
import { describe, expect, it } from 'vitest';
import { outcomeUnknown } from '../../../src/api/submissions/store.ts';
import { errors } from '../../../src/api/api-errors.ts';

const withCode = (message: string, code: string) => Object.assign(new Error(message), { code });
/** As MikroORM throws a driver's error: wrapped, the original as its cause. */
const wrapped = (cause: Error) => new Error(`insert into submissions … - ${cause.message}`, { cause });

describe('outcomeUnknown', () => {
  it('a statement whose answer was lost may have committed', () => {
    for (const error of [
      new Error('Query read timeout'),
      new Error('Connection terminated unexpectedly'),
      withCode('read ECONNRESET', 'ECONNRESET'),
      withCode('connection failure during COMMIT', '08006'),
    ]) {
      expect(outcomeUnknown(error), error.message).toBe(true);
      expect(outcomeUnknown(wrapped(error)), `wrapped: ${error.message}`).toBe(true);
    }
  });

  it('a statement PostgreSQL refused, or one never sent, did not', () => {
    for (const error of [
      withCode('duplicate key value violates unique constraint', '23505'),
      withCode('canceling statement due to statement timeout', '57014'),
      withCode('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED'),
      withCode('the database system is starting up', '57P03'),
      new Error('timeout exceeded when trying to connect'),
      errors.storageQuota(100),
    ]) {
      expect(outcomeUnknown(error), error.message).toBe(false);
      expect(outcomeUnknown(wrapped(error)), `wrapped: ${error.message}`).toBe(false);
    }
  });
});
