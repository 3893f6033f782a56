// The attachments table: one row per stored file of a submission.
import type { EntityManager } from '@mikro-orm/postgresql';
import { AttachmentSchema, type Attachment } from '../entities.ts';

/** A submission's files, in the order they came. */
export const findAttachments = (em: EntityManager, submissionId: string) =>
  em.find(AttachmentSchema, { submission: submissionId }, { orderBy: { createdAt: 'asc' } });

/** The files of these submissions, by submission, each's in the order they came: one query for a page. */
export async function findAttachmentsOf(em: EntityManager, submissionIds: string[]): Promise<Map<string, Attachment[]>> {
  const files = submissionIds.length
    ? await em.find(AttachmentSchema, { submission: { $in: submissionIds } }, { orderBy: { createdAt: 'asc', id: 'asc' } })
    : [];
  const bySubmission = new Map<string, Attachment[]>(submissionIds.map((id) => [id, []]));
  for (const file of files) bySubmission.get(file.submission.id)?.push(file);
  return bySubmission;
}

/** Where the files of these submissions are stored. */
export async function storageKeysOf(em: EntityManager, submissionIds: string[]): Promise<string[]> {
  const files = await em.execute<Array<{ storage_key: string }>>('select storage_key from attachments where submission_id in (?)', [submissionIds]);
  return files.map((file) => file.storage_key);
}

/** The file with this id of that submission, when the submission's key's address is `email`; null otherwise. */
export async function findFileOfOwner(em: EntityManager, email: string, submissionId: string, fileId: string): Promise<Attachment | null> {
  return em.findOne(AttachmentSchema, { id: fileId, submission: { id: submissionId, key: { email } } });
}
