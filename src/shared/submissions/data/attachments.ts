// Reads of the attachments table (the rows of a submission's stored files) for the HTTP adapters.
import type { EntityManager } from '@mikro-orm/postgresql';
import { AttachmentSchema, type Attachment } from '../../db/entities.ts';

/** The file with this id of that submission, when the submission's key's address is `email`; null otherwise. */
export async function findFileOfOwner(em: EntityManager, email: string, submissionId: string, fileId: string): Promise<Attachment | null> {
  return em.findOne(AttachmentSchema, { id: fileId, submission: { id: submissionId, key: { email } } });
}
