// Records `sent` the moment the SMTP server has accepted a message, on connections of its own.
// The gap between the server's 250 and this commit is the window in which a killed worker leaves
// a delivered row unrecorded (and delivered again later): it must never wait for a connection of
// the pool the jobs share for their reads and claims, nor queue behind the other jobs' `sent`.
// Acceptances that arrive while the connections are busy are written together, in one statement,
// as soon as one is free (group commit): a burst of 50 costs about two round trips, not fifty.
import pg from 'pg';
import { sentRecordDuration } from '../shared/metrics.ts';
import type { DeliveryKindName } from '../shared/delivery-kinds.ts';
import { recordSent } from '../shared/delivery-rows.ts';

type Sent = { created_at: Date; sent_at: Date };
type Pending = { kind: DeliveryKindName; id: string; messageId: string; acceptedAt: number; resolve: (row: Sent | undefined) => void; reject: (error: unknown) => void };

export type SentRecorder = {
  /** Marks the row `sent`; returns its creation and send times for the latency metric. */
  markSent: (kind: DeliveryKindName, id: string, messageId: string, acceptedAt: number) => Promise<Sent | undefined>;
  close: () => Promise<void>;
};

/**
 * Rows written by one statement at most. PostgreSQL commits a statement whose bytes reached its
 * socket even if this process is killed right after, but only while its answer (RETURNING, about
 * 110 bytes a row) fits its 8 KB output buffer: a larger answer is flushed mid-statement, the
 * write to the dead client fails, and the statement is rolled back (killed right after writing,
 * 150-row batches were lost 6 times in 20, 100-row ones never).
 */
const MAX_BATCH = 64;

export function createSentRecorder(databaseUrl: string, connections = 2): SentRecorder {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: connections });
  // A connection that breaks (idle, or while the pool closes it) is replaced on the next query, and
  // the query in flight fails on its own: the error event must not crash the process.
  pool.on('error', () => undefined);
  pool.on('connect', (client) => client.on('error', () => undefined));
  const pending: Pending[] = [];
  let busy = 0;

  async function write(kind: DeliveryKindName, batch: Pending[]): Promise<void> {
    try {
      const rows = await recordSent(pool, kind, batch);
      const byId = new Map(rows.map((row) => [row.id, row]));
      const now = performance.now();
      for (const item of batch) {
        sentRecordDuration.observe((now - item.acceptedAt) / 1000);
        item.resolve(byId.get(item.id));
      }
    } catch (error) {
      for (const item of batch) item.reject(error);
    }
  }

  function flush(): void {
    while (busy < connections && pending.length > 0) {
      const batch = pending.splice(0, MAX_BATCH);
      busy += 1;
      const kinds = [...new Set(batch.map((item) => item.kind))];
      void Promise.all(kinds.map((kind) => write(kind, batch.filter((item) => item.kind === kind)))).finally(() => {
        busy -= 1;
        flush();
      });
    }
  }

  return {
    markSent(kind, id, messageId, acceptedAt) {
      return new Promise((resolve, reject) => {
        pending.push({ kind, id, messageId, acceptedAt, resolve, reject });
        flush();
      });
    },
    close: () => pool.end(),
  };
}
