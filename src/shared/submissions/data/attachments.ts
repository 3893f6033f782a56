// The attachments table: one row per stored file of a submission.
import type { EntityManager } from '@mikro-orm/postgresql';
import { AttachmentSchema, type Attachment } from '../../infra/db/entities.ts';

/** A submission's files, in the order they came. */
export const findAttachments = (em: EntityManager, submissionId: string) =>
  em.find(AttachmentSchema, { submission: submissionId }, { orderBy: { createdAt: 'asc' } });

/** Where the files of these submissions are stored. */
export async function storageKeysOf(em: EntityManager, submissionIds: string[]): Promise<string[]> {
  const files = await em.execute<Array<{ storage_key: string }>>('select storage_key from attachments where submission_id in (?)', [submissionIds]);
  return files.map((file) => file.storage_key);
}

/** The file with this id of that submission, when the submission's key's address is `email`; null otherwise. */
export async function findFileOfOwner(em: EntityManager, email: string, submissionId: string, fileId: string): Promise<Attachment | null> {
  return em.findOne(AttachmentSchema, { id: fileId, submission: { id: submissionId, key: { email } } });
}
