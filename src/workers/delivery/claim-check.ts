// A worker that outlived its claim (stopped, or starved, past CLAIM_LEASE_MS) must not send what
// the worker that claimed the row after it sends. Only a claim older than the lease can be taken,
// so a claim younger than half the lease by this process's clocks is still this worker's without
// asking; an older one is asked of PostgreSQL just before sending (one primary-key lookup).
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from '../../shared/infra/log.ts';
import { deliveryKinds, type DeliveryKindName } from '../../shared/deliveries/delivery-kinds.ts';
import { holdsClaim, type ClaimToken } from '../../shared/deliveries/deliveries.ts';

/** When a claim was asked for, by both clocks: the monotonic one runs on while the process is stopped, the wall clock while its machine sleeps. */
export type ClaimClock = { monotonic: number; wall: number };

export const claimClock = (): ClaimClock => ({ monotonic: performance.now(), wall: Date.now() });

/** Whether the row is still this worker's claim, asked of the database only when the claim may have passed its lease. */
export async function stillClaimed(
  em: EntityManager,
  kind: DeliveryKindName,
  id: string,
  claim: ClaimToken,
  since: ClaimClock,
  claimLeaseMs: number,
): Promise<boolean> {
  const ageMs = Math.max(performance.now() - since.monotonic, Date.now() - since.wall);
  return ageMs < claimLeaseMs / 2 || holdsClaim(em, kind, id, claim);
}

/** The one line a worker logs when its claim passed to another worker: `what` it did and did not do. */
export function logLostClaim(log: Logger, kind: DeliveryKindName, id: string, what: string): void {
  log.warn({ table: deliveryKinds[kind].table, id }, `another worker claimed the row after this worker's claim passed CLAIM_LEASE_MS: ${what}`);
}
