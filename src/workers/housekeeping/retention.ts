// Housekeeping of stored submissions, run by one scheduled job: submissions past their time go, in
// batches, with their attachment rows and stored files, and their bytes come off their key's
// storage quota. What is past its time:
// - with RETENTION_DAYS, every delivered (or finished) submission older than that;
// - always, held submissions older than HELD_TTL_DAYS (their address never confirmed), and skipped
//   submissions of unconfirmed mailboxes older than UNCONFIRMED_SKIPPED_TTL_DAYS (recipient consent);
// - always, the consent allowance counters of past hours;
// - always, expired owner console sessions and sign-in links;
// - always, spam campaign votes older than CAMPAIGN_VOTE_DAYS;
// - always, settled autoresponses older than AUTORESPONSE_ROWS_KEPT_DAYS (their 24-hour bounds are over);
// - always, copies to added recipients held longer than HELD_TTL_DAYS (the address never confirmed);
// - always, the stored objects of infected files past their quarantine (QUARANTINE_DAYS; src/shared/files).
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from '../../shared/infra/log.ts';
import type { Storage } from '../../shared/infra/storage.ts';
import { deleteExpiredOwnerTokens } from '../../shared/owners/owners.ts';
import { deleteOldCampaignVotes } from '../../shared/spam/spam-campaigns.ts';
import { deleteOldTeachings } from '../../shared/spam/spam-teaching.ts';
import { deleteOldAllowances } from '../../shared/keys/keys.ts';
import { AUTORESPONSE_ROWS_KEPT_DAYS, deleteOldAutoresponses } from '../../shared/autoresponses/autoresponses.ts';
import { deleteOldHeldCopies } from '../../shared/recipients/recipients.ts';
import { purgeQuarantinedFiles } from '../../shared/files/files.ts';
import { deleteOldIdempotencyKeys, IDEMPOTENCY_KEPT_HOURS } from '../../shared/submissions/submissions.ts';
import { deleteSubmissions, findExpiredIds, type ExpiringSubmissions } from '../../shared/submissions/submissions.ts';

const BATCH = 500;
/** One run deletes at most this many batches of each kind; the next run continues. */
const MAX_BATCHES = 100;

export type RetentionPolicy = { retentionDays: number | undefined; heldTtlDays: number; unconfirmedSkippedTtlDays: number };

export async function applyRetention(em: EntityManager, storage: Storage, log: Logger, policy: RetentionPolicy): Promise<number> {
  const rules: Array<{ reason: string; which: ExpiringSubmissions; days: number | undefined }> = [
    { reason: 'retention', which: 'settled', days: policy.retentionDays },
    { reason: 'held expired', which: 'held', days: policy.heldTtlDays },
    { reason: 'unconfirmed skipped expired', which: 'unconfirmed skipped', days: policy.unconfirmedSkippedTtlDays },
  ];
  let deleted = 0;
  for (const rule of rules) {
    if (rule.days === undefined) continue;
    const count = await deleteOlderThan(em, storage, rule.which, rule.days);
    if (count) log.info({ deleted: count, days: rule.days, reason: rule.reason }, 'deleted old submissions');
    deleted += count;
  }
  await deleteOldAllowances(em);
  await deleteOldTeachings(em);
  await deleteOldCampaignVotes(em);
  await deleteExpiredOwnerTokens(em);
  await deleteOldAutoresponses(em, AUTORESPONSE_ROWS_KEPT_DAYS);
  await deleteOldIdempotencyKeys(em, IDEMPOTENCY_KEPT_HOURS);
  const copies = await deleteOldHeldCopies(em, policy.heldTtlDays);
  if (copies) log.info({ deleted: copies, days: policy.heldTtlDays }, 'deleted copies held for added recipients that never confirmed');
  let purged = 0;
  for (let batch = 0, count = -1; batch < MAX_BATCHES && count !== 0; batch++) purged += count = await purgeQuarantinedFiles(em, storage, BATCH);
  if (purged) log.info({ deleted: purged }, 'deleted infected files from storage: their quarantine is over');
  return deleted;
}

async function deleteOlderThan(em: EntityManager, storage: Storage, which: ExpiringSubmissions, days: number): Promise<number> {
  let deleted = 0;
  for (let batch = 0; batch < MAX_BATCHES; batch++) {
    const ids = await findExpiredIds(em, which, days, BATCH);
    if (ids.length === 0) break;
    await deleteSubmissions(em, storage, ids);
    deleted += ids.length;
  }
  return deleted;
}
