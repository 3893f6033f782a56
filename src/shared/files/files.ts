// The virus scan of a submission's files (docs/file-scanning.md). The worker that first sends or
// posts anything naming a file (the owner's email, a copy, a webhook or chat post) scans the
// files not scanned yet, each once, streaming it from storage to clamd (./clamd.ts), and records
// its outcome on its row; every later delivery reads the stored outcome. An infected file reaches
// nobody: its object is deleted at once, or moved under `quarantine/` for QUARANTINE_DAYS. A
// scanner that is down or slow costs time, never mail: the delivery is retried until SCAN_WAIT_MS
// after the submission, then its files go out `unscanned` (linked, not attached), unless
// SCAN_UNAVAILABLE=hold. With neither CLAMD_SOCKET nor CLAMD_HOST, nothing is scanned.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Attachment } from '../submissions/entities.ts';
import type { Config } from '../infra/config.ts';
import type { Logger } from '../infra/log.ts';
import type { Storage } from '../infra/storage.ts';
import { countScannerWaitingWith, fileScans } from '../infra/metrics.ts';
import { scanStream, ScannerUnavailableError, type ClamdAddress } from './clamd.ts';
import { findFilesToPurge, markPurged, recordScanOutcome, scanOutcomesOf, type ScanRecord } from './data/file-scans.ts';

export { scanRecord } from '../submissions/submissions.ts';
export { pingClamd, scanStream, ScannerUnavailableError, type ClamdAddress, type ClamdVerdict } from './clamd.ts';

/** Where a quarantined file's object lives: never linked, never served. */
export const QUARANTINE_PREFIX = 'quarantine/';

const DAY_MS = 86_400_000;

export type FileScanSettings = {
  address: ClamdAddress;
  timeoutMs: number;
  waitMs: number;
  unavailable: 'deliver' | 'hold';
  quarantineDays: number;
  maxBytes: number;
  /** A delivery not seen waiting for this long is no longer counted as waiting (its job gone, or settled elsewhere). */
  waitingFreshMs: number;
};

/** The scan's settings; undefined when scanning is off (neither CLAMD_SOCKET nor CLAMD_HOST). */
export function fileScanSettingsOf(config: Config): FileScanSettings | undefined {
  const address: ClamdAddress | undefined = config.CLAMD_SOCKET
    ? { socket: config.CLAMD_SOCKET }
    : config.CLAMD_HOST
      ? { host: config.CLAMD_HOST, port: config.CLAMD_PORT }
      : undefined;
  if (!address) return undefined;
  return {
    address,
    timeoutMs: config.CLAMD_TIMEOUT_MS,
    waitMs: config.SCAN_WAIT_MS,
    unavailable: config.SCAN_UNAVAILABLE,
    quarantineDays: config.QUARANTINE_DAYS,
    maxBytes: config.SCAN_MAX_BYTES,
    waitingFreshMs: Math.max(config.EMAIL_RETRY_MAX_BACKOFF_MS, config.WEBHOOK_RETRY_MAX_BACKOFF_MS) + 60_000,
  };
}

/** Thrown instead of delivering: the scanner is down or slow, and the delivery waits for it. `retryWithinMs`: when SCAN_WAIT_MS ends (unbounded with hold). */
export class ScannerWaitError extends Error {
  override name = 'ScannerWaitError';
  readonly retryWithinMs: number;
  constructor(reason: string, retryWithinMs: number) {
    super(reason);
    this.retryWithinMs = retryWithinMs;
  }
}

/** How a delivery carries a file: attached (or linked when too large), only linked, or not at all. */
export type FileHandling = 'deliver' | 'link' | 'withhold';

export function fileHandling(file: Pick<Attachment, 'scanOutcome'>): FileHandling {
  if (file.scanOutcome === 'infected') return 'withhold';
  if (file.scanOutcome === 'unscanned' || file.scanOutcome === 'too_large_to_scan') return 'link';
  return 'deliver';
}

/** What a message tells of the file's scan; nothing for a clean file, or with scanning off. */
export function scanNote(file: Pick<Attachment, 'scanOutcome' | 'scanDetail'>): string | undefined {
  switch (file.scanOutcome) {
    case 'infected':
      return `Withheld: infected (${file.scanDetail ?? 'unnamed signature'}). The file was removed and cannot be downloaded.`;
    case 'unscanned':
      return `Not scanned for viruses (${file.scanDetail ?? 'the scanner was unavailable'}): linked, not attached. Open it with care.`;
    case 'too_large_to_scan':
      return 'Too large to scan for viruses: linked, not attached. Open it with care.';
    default:
      return undefined;
  }
}

/** Deliveries waiting for the scanner, by submission, and when each was last seen waiting. */
const waiting = new Map<string, number>();
let waitingFreshMs = Infinity;
countScannerWaitingWith(() => {
  const now = Date.now();
  for (const [id, seen] of waiting) if (now - seen > waitingFreshMs) waiting.delete(id);
  return waiting.size;
});

/**
 * The submission's files with their outcomes, each scanned that has none; throws ScannerWaitError
 * while the scanner is unavailable and the delivery should wait. Scanning off: the files as they are.
 */
export async function scanSubmissionFiles(
  context: { em: EntityManager; storage: Storage; log: Logger },
  settings: FileScanSettings | undefined,
  submission: { id: string; createdAt: Date },
  files: Attachment[],
): Promise<Attachment[]> {
  const pending = files.filter((file) => file.scanOutcome === null);
  if (!settings || pending.length === 0) return files;
  waitingFreshMs = settings.waitingFreshMs;
  let unavailable: ScannerUnavailableError | undefined;
  for (const file of pending) {
    try {
      await scanOne(context, settings, file);
    } catch (error) {
      if (!(error instanceof ScannerUnavailableError)) throw error;
      unavailable = error;
      break;
    }
  }
  if (unavailable) {
    const waitedMs = Date.now() - submission.createdAt.getTime();
    if (settings.unavailable === 'hold' || waitedMs < settings.waitMs) {
      waiting.set(submission.id, Date.now());
      const left = settings.unavailable === 'hold' ? Infinity : settings.waitMs - waitedMs;
      context.log.warn({ submissionId: submission.id, cause: unavailable.message }, 'the file scanner is unavailable: the delivery waits for it');
      throw new ScannerWaitError(`file scanner unavailable (${unavailable.message}): waiting to scan the files`, left);
    }
    // The owner is told what happened, not the socket's path: the log has the cause.
    const reason = unavailable.message.includes('did not answer within') ? 'the scanner did not answer in time' : 'the scanner was unavailable';
    const stored = await scanOutcomesOf(
      context.em,
      pending.map((file) => file.id),
    );
    for (const file of pending) if (!stored.get(file.id)?.outcome) await settle(context, file, { outcome: 'unscanned', detail: reason });
    context.log.warn(
      { submissionId: submission.id, cause: unavailable.message },
      'the file scanner was unavailable past SCAN_WAIT_MS: the files go out unscanned',
    );
  }
  waiting.delete(submission.id);
  const outcomes = await scanOutcomesOf(
    context.em,
    files.map((file) => file.id),
  );
  return files.map((file) => {
    const stored = outcomes.get(file.id);
    return stored ? { ...file, scanOutcome: stored.outcome, scanDetail: stored.detail, storageKey: stored.storageKey } : file;
  });
}

async function scanOne(context: { em: EntityManager; storage: Storage; log: Logger }, settings: FileScanSettings, file: Attachment): Promise<void> {
  if (file.size > settings.maxBytes) {
    await settle(context, file, { outcome: 'too_large_to_scan', detail: `larger than SCAN_MAX_BYTES (${settings.maxBytes} bytes)` });
    return;
  }
  const verdict = await scanStream(settings.address, await context.storage.download(file.storageKey), settings.timeoutMs);
  if (verdict.kind === 'clean') await settle(context, file, { outcome: 'clean', detail: null });
  else if (verdict.kind === 'too-large') await settle(context, file, { outcome: 'too_large_to_scan', detail: "past clamd's stream size limit" });
  else await withhold(context, settings, file, verdict.signature);
}

async function settle(context: { em: EntityManager }, file: Attachment, record: ScanRecord): Promise<boolean> {
  const recorded = await recordScanOutcome(context.em, file.id, record);
  if (recorded) fileScans.inc({ outcome: record.outcome });
  return recorded;
}

/**
 * An infected file: moved under QUARANTINE_PREFIX (QUARANTINE_DAYS > 0) or deleted, its row saying
 * so first. Its purge_at makes housekeeping delete the object then (for a deletion at once, again:
 * a delete that failed here is made there).
 */
async function withhold(
  context: { em: EntityManager; storage: Storage; log: Logger },
  settings: FileScanSettings,
  file: Attachment,
  signature: string,
): Promise<void> {
  const quarantined = settings.quarantineDays > 0 ? `${QUARANTINE_PREFIX}${file.storageKey}` : undefined;
  if (quarantined) await context.storage.copy(file.storageKey, quarantined);
  const purgeAt = new Date(Date.now() + settings.quarantineDays * DAY_MS);
  const recorded = await settle(context, file, { outcome: 'infected', detail: signature, ...(quarantined ? { storageKey: quarantined } : {}), purgeAt });
  if (!recorded) return;
  context.log.warn({ fileId: file.id, signature, quarantined: quarantined !== undefined }, 'infected file withheld');
  await context.storage
    .remove([file.storageKey])
    .catch((error: unknown) =>
      context.log.error({ err: error, fileId: file.id, storageKey: file.storageKey }, 'could not delete an infected file from storage'),
    );
}

/** Deletes the objects of the files past their purge time (quarantines over): up to `batch` a call; how many. */
export async function purgeQuarantinedFiles(em: EntityManager, storage: Storage, batch = 500): Promise<number> {
  const files = await findFilesToPurge(em, batch);
  if (!files.length) return 0;
  await storage.remove(files.map((file) => file.storageKey));
  await markPurged(
    em,
    files.map((file) => file.id),
  );
  return files.length;
}
