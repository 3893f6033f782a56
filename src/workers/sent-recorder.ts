// Records `sent` the moment the SMTP server has accepted a message, on connections of its own.
// The gap between the server's 250 and this commit is the window in which a killed worker leaves
// a delivered row unrecorded (and delivered again later): it must never wait for a connection of
// the pool the jobs share for their reads and claims.
import pg from 'pg';
import { sentRecordDuration } from '../shared/metrics.ts';
import type { DeliveryTable } from './send.ts';

export type SentRecorder = {
  /** Marks the row `sent`; returns its creation and send times for the latency metric. */
  markSent: (table: DeliveryTable, id: string, messageId: string, acceptedAt: number) => Promise<{ created_at: Date; sent_at: Date } | undefined>;
  close: () => Promise<void>;
};

/** Two connections carry well over a thousand of these one-row updates per second. */
export function createSentRecorder(databaseUrl: string, connections = 2): SentRecorder {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: connections });
  // An idle connection that breaks is replaced on the next query; the error must not crash the process.
  pool.on('error', () => undefined);
  return {
    async markSent(table, id, messageId, acceptedAt) {
      const result = await pool.query<{ created_at: Date; sent_at: Date }>(
        `update ${table} set email_status = 'sent', sent_at = now(), message_id = $1, last_error = null where id = $2
         returning created_at, sent_at`,
        [messageId, id],
      );
      sentRecordDuration.observe((performance.now() - acceptedAt) / 1000);
      return result.rows[0];
    },
    close: () => pool.end(),
  };
}
