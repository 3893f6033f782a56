// The claims of the submission jobs that a worker starts together go to PostgreSQL as one
// statement (group commit, ../../shared/infra/group-commit.ts): with 50 jobs in flight, one UPDATE claims a
// burst instead of fifty, which saves PostgreSQL a transaction and the worker a round trip per
// email (docs/benchmarks.md#scenarios-and-targets). Each job still gets only its own row, and only if its own
// compare-and-set succeeded (claimSubmissions). The statement is prepared on a connection of its
// own, so PostgreSQL plans it once, not once per batch.
import { claimSubmissions, type SubmissionClaim } from '../../shared/deliveries/deliveries.ts';
import { createPgPool, statementRunner, type DatabasePooler, type PgTimeouts } from '../../shared/infra/db/pg-pool.ts';
import { groupCommit } from '../../shared/infra/group-commit.ts';
import { OWNER_MIN_LEARNS } from '../../shared/spam/spam-filter.ts';

/** Claims submission `id`; undefined when the row is not claimable (sent, or another worker's). */
export type SubmissionClaimer = (id: string) => Promise<SubmissionClaim | undefined>;

/** Rows claimed by one statement at most: more than one worker's concurrency is never waiting. */
const MAX_BATCH = 100;

/**
 * How long a claim waits for others to share its statement. A drained backlog starts jobs one at a
 * time, as others finish, so without a wait most statements carried one or two claims, and each
 * statement costs PostgreSQL CPU and the worker a round trip. A wait of 2 ms is nothing beside the
 * tens of ms an SMTP server takes, and lets most claims share a statement
 * (docs/benchmarks.md#scenarios-and-targets).
 */
const LINGER_MS = 2;

/** `pooler`: DATABASE_POOLER (behind a transaction pooler the claim is not prepared by name). */
export function createSubmissionClaimer(
  database: { url: string; pooler: DatabasePooler },
  claimLeaseMs: number,
  timeouts?: PgTimeouts,
): { claim: SubmissionClaimer; close: () => Promise<void> } {
  // One statement in flight at most: the claims that arrive meanwhile wait for it (about a
  // millisecond, against the tens an SMTP server takes) and go together in the next. Two in
  // flight made batches half as large and cost PostgreSQL and the worker more per email. Two
  // connections: when a shared claim fails, its ids are claimed again one by one.
  const pool = createPgPool(database.url, 2, timeouts, { pooler: database.pooler });
  const statements = statementRunner(pool, database.pooler);
  const claim = groupCommit<string, SubmissionClaim | undefined>((ids) => claimSubmissions(statements, ids, claimLeaseMs, OWNER_MIN_LEARNS), {
    maxBatch: MAX_BATCH,
    maxInFlight: 1,
    lingerMs: LINGER_MS,
  });
  return { claim, close: () => pool.end() };
}
