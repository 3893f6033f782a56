// Retention: with RETENTION_DAYS set, a scheduled job deletes submissions older than that, their
// attachment rows and their stored files, in batches. Rows still being delivered are kept.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from '../shared/log.ts';
import type { Storage } from '../shared/storage.ts';
import { SETTLED, sqlList } from './statuses.ts';

const BATCH = 500;
/** One run deletes at most this many batches; the next run continues. */
const MAX_BATCHES = 100;

export async function applyRetention(em: EntityManager, storage: Storage, log: Logger, days: number): Promise<number> {
  let deleted = 0;
  for (let batch = 0; batch < MAX_BATCHES; batch++) {
    const rows = await em.execute<Array<{ id: string }>>(
      `select id from submissions
        where created_at < now() - make_interval(days => ?)
          and email_status in (${sqlList(SETTLED)})
        order by created_at limit ${BATCH}`,
      [days],
    );
    if (rows.length === 0) break;
    const ids = rows.map((row) => row.id);
    const files = await em.execute<Array<{ storage_key: string }>>('select storage_key from attachments where submission_id in (?)', [ids]);
    // Files first: a crash between the two steps leaves rows pointing at nothing, never orphan files.
    if (files.length) await storage.remove(files.map((file) => file.storage_key));
    await em.execute('delete from submissions where id in (?)', [ids]); // attachments cascade
    deleted += ids.length;
  }
  if (deleted) log.info({ deleted, days }, 'retention deleted old submissions');
  return deleted;
}
