// Records `sent` the moment the SMTP server has accepted a message, on connections of its own.
// The gap between the server's 250 and this commit is the window in which a killed worker leaves
// a delivered row unrecorded (and delivered again later): it must never wait for a connection of
// the pool the jobs share for their reads and claims, nor queue behind the other jobs' `sent`.
// Acceptances that arrive while the connections are busy are written together, in one statement,
// as soon as one is free (group commit, ../../shared/infra/group-commit.ts): a burst of 50 costs about two
// round trips, not fifty.
import { sentRecordDuration } from '../../shared/infra/metrics.ts';
import type { KindsIn } from '../../shared/deliveries/delivery-kinds.ts';
import { recordSent, type ClaimToken, type SentItem, type SentRow, type SpamResult } from '../../shared/deliveries/deliveries.ts';
import { groupCommit } from '../../shared/infra/group-commit.ts';
import { createPgPool, statementRunner, type DatabasePooler, type PgTimeouts } from '../../shared/infra/db/pg-pool.ts';

/**
 * What the SMTP server accepted, under which claim: the Message-ID, its reply (250 …), and a
 * submission's spam verdict and autoresponse outcome, when known.
 */
export type Acceptance = {
  claim: ClaimToken;
  messageId: string;
  response?: string | undefined;
  spam?: SpamResult | undefined;
  autoresponse?: SentItem['autoresponse'];
};
type Accepted = Acceptance & { kind: KindsIn<'email'>; id: string };

export type SentRecorder = {
  /**
   * Marks the row `sent` (a submission with its verdict and its attempt in the history); returns its
   * creation and send times for the latency metric, undefined when the row is no longer the claim's.
   */
  markSent: (kind: KindsIn<'email'>, id: string, accepted: Acceptance) => Promise<SentRow | undefined>;
  close: () => Promise<void>;
};

/**
 * Rows written by one statement at most. PostgreSQL commits a statement whose bytes reached its
 * socket even if this process is killed right after, but only while its answer (RETURNING) fits its
 * 8 KB output buffer: a larger answer is flushed mid-statement, the write to the dead client fails,
 * and the statement is rolled back. The answer for this many rows fits with room to spare; much
 * larger batches were lost (docs/benchmarks.md#batches-of-sent-rows).
 */
const MAX_BATCH = 64;

/** `worker`: this process's name in the delivery history; `pooler`: DATABASE_POOLER. */
export function createSentRecorder(database: { url: string; pooler: DatabasePooler }, worker: string, timeouts?: PgTimeouts, connections = 2): SentRecorder {
  const pool = createPgPool(database.url, connections, timeouts, { pooler: database.pooler });
  const statements = statementRunner(pool, database.pooler);

  // One statement per kind in the batch (nearly always one); each caller gets its own row.
  const record = groupCommit<Accepted, SentRow | undefined>(
    async (batch) => {
      const kinds = [...new Set(batch.map((item) => item.kind))];
      const written = await Promise.all(
        kinds.map((kind) =>
          recordSent(
            statements,
            kind,
            batch.filter((item) => item.kind === kind),
            worker,
          ),
        ),
      );
      const byId = new Map(written.flat().map((row) => [row.id, row]));
      return batch.map((item) => byId.get(item.id));
    },
    { maxBatch: MAX_BATCH, maxInFlight: connections },
  );

  return {
    async markSent(kind, id, accepted) {
      const acceptedAt = performance.now();
      const row = await record({ ...accepted, kind, id });
      sentRecordDuration.observe((performance.now() - acceptedAt) / 1000);
      return row;
    },
    close: () => pool.end(),
  };
}
