// What a signed-in owner may reach: only keys whose address is the session's, and the submissions
// and files of those keys. Every lookup names the owner's address in its query, so "not yours"
// and "does not exist" are the same answer (undefined → 404).
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Attachment, Submission, VerificationKey } from '../../shared/infra/db/entities.ts';
import { findKeyOfOwner } from '../../shared/keys/keys.ts';
import { findFileOfOwner, findSubmissionOfOwner } from '../../shared/submissions/submissions.ts';
import { requeueFailed } from '../../shared/submissions/data/delivery-status.ts';
import { submissionJob, type DeliveryJob } from '../../shared/submissions/delivery-jobs.ts';
import type { Queue } from 'bullmq';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export async function ownedKey(em: EntityManager, email: string, keyId: string): Promise<VerificationKey | undefined> {
  if (!UUID.test(keyId)) return undefined;
  return (await findKeyOfOwner(em, email, keyId)) ?? undefined;
}

export async function ownedSubmission(em: EntityManager, email: string, id: string): Promise<Submission | undefined> {
  if (!UUID.test(id)) return undefined;
  return (await findSubmissionOfOwner(em, email, id)) ?? undefined;
}

export async function ownedFile(em: EntityManager, email: string, submissionId: string, fileId: string): Promise<Attachment | undefined> {
  if (!UUID.test(submissionId) || !UUID.test(fileId)) return undefined;
  return (await findFileOfOwner(em, email, submissionId, fileId)) ?? undefined;
}

/** Job states in which a job will still run. */
const PENDING_STATES = new Set(['waiting', 'active', 'delayed', 'prioritized', 'waiting-children']);

/**
 * Puts a failed submission back in the queue, as the queue dashboard's retry does: the row becomes
 * `queued` (so the reconciler picks it up if the enqueue is lost) and a job is added. False when
 * the row is not `failed`.
 */
export async function markForResend(em: EntityManager, id: string): Promise<boolean> {
  return requeueFailed(em, 'submission', id);
}

/** How long a re-send waits for the job that just ended the row to finish in BullMQ too. */
const ACTIVE_WAIT_MS = 3_000;

/**
 * A finished job under the row's id would make the new add a no-op: remove it first. The worker
 * writes the row's outcome before BullMQ moves its job out of `active`, so a re-send right after
 * the failure can find the job still active: it waits for that move (a few ms, at most
 * ACTIVE_WAIT_MS) instead of leaving the row to the reconciler.
 */
export async function clearFinishedJob(queue: Queue<DeliveryJob>, id: string): Promise<void> {
  const job = await queue.getJob(id);
  if (!job) return;
  const until = Date.now() + ACTIVE_WAIT_MS;
  let state = await job.getState();
  while (state === 'active' && Date.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    state = await job.getState();
  }
  if (!PENDING_STATES.has(state)) await job.remove().catch(() => undefined);
}

export const resendJob = submissionJob;
