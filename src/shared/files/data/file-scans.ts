// The virus scan's columns of the attachments table (src/shared/submissions/entities.ts): each
// file's outcome, written once, and the quarantined objects that housekeeping deletes.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { FileScanOutcome } from '../../words/file-scan-outcomes.ts';

export type ScanRecord = { outcome: FileScanOutcome; detail: string | null; storageKey?: string; purgeAt?: Date };

/**
 * Records the file's outcome unless one is there (a worker that scanned it first); true when this
 * one is recorded. `storageKey`: where a quarantined file now lives; `purgeAt`: when its object goes.
 */
export async function recordScanOutcome(em: EntityManager, fileId: string, record: ScanRecord): Promise<boolean> {
  const rows = await em.execute<Array<{ id: string }>>(
    `update attachments set scan_outcome = ?, scan_detail = ?, scanned_at = now(), storage_key = coalesce(?, storage_key), purge_at = ?
      where id = ? and scan_outcome is null returning id`,
    [record.outcome, record.detail?.slice(0, 500) ?? null, record.storageKey ?? null, record.purgeAt ?? null, fileId],
  );
  return rows.length > 0;
}

/** The stored outcomes of these files (those recorded by another worker included). */
export async function scanOutcomesOf(
  em: EntityManager,
  fileIds: string[],
): Promise<Map<string, { outcome: FileScanOutcome | null; detail: string | null; storageKey: string }>> {
  if (!fileIds.length) return new Map();
  const rows = await em.execute<Array<{ id: string; scan_outcome: FileScanOutcome | null; scan_detail: string | null; storage_key: string }>>(
    'select id, scan_outcome, scan_detail, storage_key from attachments where id in (?)',
    [fileIds],
  );
  return new Map(rows.map((row) => [row.id, { outcome: row.scan_outcome, detail: row.scan_detail, storageKey: row.storage_key }]));
}

/** Up to `limit` files whose object is past its time (a quarantine over, or an infected file's delete to make sure of). */
export async function findFilesToPurge(em: EntityManager, limit: number): Promise<Array<{ id: string; storageKey: string }>> {
  const rows = await em.execute<Array<{ id: string; storage_key: string }>>(
    'select id, storage_key from attachments where purge_at <= now() order by purge_at limit ?',
    [limit],
  );
  return rows.map((row) => ({ id: row.id, storageKey: row.storage_key }));
}

/** These files' objects are deleted: nothing more to purge. */
export async function markPurged(em: EntityManager, fileIds: string[]): Promise<void> {
  if (fileIds.length) await em.execute('update attachments set purge_at = null where id in (?)', [fileIds]);
}
