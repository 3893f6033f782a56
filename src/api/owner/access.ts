// What a signed-in owner may reach: only keys whose address is the session's, and the submissions
// and files of those keys. Every lookup names the owner's address in its query, so "not yours"
// and "does not exist" are the same answer (undefined → 404).
import type { EntityManager } from '@mikro-orm/postgresql';
import {
  AttachmentSchema,
  SubmissionSchema,
  VerificationKeySchema,
  type Attachment,
  type Submission,
  type VerificationKey,
} from '../../shared/db/entities.ts';
import { requeueFailed } from '../../shared/delivery-rows.ts';
import { submissionJob, type DeliveryJob } from '../../shared/queue.ts';
import type { Queue } from 'bullmq';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export async function ownedKey(em: EntityManager, email: string, keyId: string): Promise<VerificationKey | undefined> {
  if (!UUID.test(keyId)) return undefined;
  return (await em.findOne(VerificationKeySchema, { id: keyId, email })) ?? undefined;
}

export async function ownedSubmission(em: EntityManager, email: string, id: string): Promise<Submission | undefined> {
  if (!UUID.test(id)) return undefined;
  return (await em.findOne(SubmissionSchema, { id, key: { email } })) ?? undefined;
}

export async function ownedFile(em: EntityManager, email: string, submissionId: string, fileId: string): Promise<Attachment | undefined> {
  if (!UUID.test(submissionId) || !UUID.test(fileId)) return undefined;
  return (await em.findOne(AttachmentSchema, { id: fileId, submission: { id: submissionId, key: { email } } })) ?? undefined;
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

/** A finished job under the row's id would make the new add a no-op: remove it first. */
export async function clearFinishedJob(queue: Queue<DeliveryJob>, id: string): Promise<void> {
  const job = await queue.getJob(id);
  if (job && !PENDING_STATES.has(await job.getState())) await job.remove();
}

export const resendJob = submissionJob;
