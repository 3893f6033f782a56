// Records `sent` the moment the SMTP server has accepted a message, on connections of its own.
// The gap between the server's 250 and this commit is the window in which a killed worker leaves
// a delivered row unrecorded (and delivered again later): it must never wait for a connection of
// the pool the jobs share for their reads and claims, nor queue behind the other jobs' `sent`.
// Acceptances that arrive while the connections are busy are written together, in one statement,
// as soon as one is free (group commit): a burst of 50 costs about two round trips, not fifty.
import pg from 'pg';
import { sentRecordDuration } from '../shared/metrics.ts';
import type { DeliveryTable } from './send.ts';

type Sent = { created_at: Date; sent_at: Date };
type Pending = { table: DeliveryTable; id: string; messageId: string; acceptedAt: number; resolve: (row: Sent | undefined) => void; reject: (error: unknown) => void };

export type SentRecorder = {
  /** Marks the row `sent`; returns its creation and send times for the latency metric. */
  markSent: (table: DeliveryTable, id: string, messageId: string, acceptedAt: number) => Promise<Sent | undefined>;
  close: () => Promise<void>;
};

/** Rows written by one statement at most. */
const MAX_BATCH = 500;

export function createSentRecorder(databaseUrl: string, connections = 2): SentRecorder {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: connections });
  // A connection that breaks (idle, or while the pool closes it) is replaced on the next query, and
  // the query in flight fails on its own: the error event must not crash the process.
  pool.on('error', () => undefined);
  pool.on('connect', (client) => client.on('error', () => undefined));
  const pending: Pending[] = [];
  let busy = 0;

  async function write(table: DeliveryTable, batch: Pending[]): Promise<void> {
    try {
      const result = await pool.query<Sent & { id: string }>(
        `update ${table} as t
            set email_status = 'sent', sent_at = now(), message_id = v.message_id, last_error = null
           from unnest($1::uuid[], $2::text[]) as v(id, message_id)
          where t.id = v.id
          returning t.id, t.created_at, t.sent_at`,
        [batch.map((item) => item.id), batch.map((item) => item.messageId)],
      );
      const byId = new Map(result.rows.map((row) => [row.id, row]));
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
      const tables = [...new Set(batch.map((item) => item.table))];
      void Promise.all(tables.map((table) => write(table, batch.filter((item) => item.table === table)))).finally(() => {
        busy -= 1;
        flush();
      });
    }
  }

  return {
    markSent(table, id, messageId, acceptedAt) {
      return new Promise((resolve, reject) => {
        pending.push({ table, id, messageId, acceptedAt, resolve, reject });
        flush();
      });
    },
    close: () => pool.end(),
  };
}
