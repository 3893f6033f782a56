// What a signed-in owner may reach: only keys whose address is the session's, and the submissions
// and files of those keys. Every lookup names the owner's address in its query, so "not yours"
// and "does not exist" are the same answer (undefined → 404).
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Attachment, Submission } from '../../shared/submissions/entities.ts';
import type { VerificationKey } from '../../shared/keys/entities.ts';
import { findKeyOfOwner } from '../../shared/keys/keys.ts';
import { findFileOfOwner, findSubmissionOfOwner } from '../../shared/submissions/submissions.ts';

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

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
