// The body of a `submission.created` webhook (its JSON Schema: src/api/openapi.ts, under `webhooks`).
// Files travel as presigned links, made fresh for each attempt.
import type { EntityManager } from '@mikro-orm/postgresql';
import { AttachmentSchema, type Submission } from '../shared/db/entities.ts';
import { withoutBidiControls } from '../shared/display-text.ts';
import type { Storage } from '../shared/storage.ts';

export type SubmissionCreated = {
  type: 'submission.created';
  timestamp: string;
  data: {
    id: string;
    created_at: string;
    email: string;
    subject: string;
    message: string;
    fields: Array<{ name: string; value: string }>;
    files: Array<{ name: string; type: string; size: number; sha256: string; url: string; url_expires_at: string }>;
  };
};

export async function buildPayload(em: EntityManager, storage: Storage, submission: Submission, linkTtlSeconds: number): Promise<SubmissionCreated> {
  const stored = await em.find(AttachmentSchema, { submission: submission.id }, { orderBy: { createdAt: 'asc' } });
  const expires = new Date(Date.now() + linkTtlSeconds * 1000).toISOString();
  const files = await Promise.all(
    stored.map(async (file) => ({
      name: withoutBidiControls(file.filename),
      type: file.contentType,
      size: file.size,
      sha256: file.sha256,
      url: await storage.presign(file.storageKey, withoutBidiControls(file.filename), linkTtlSeconds, file.contentType),
      url_expires_at: expires,
    })),
  );
  return {
    type: 'submission.created',
    timestamp: new Date().toISOString(),
    data: {
      id: submission.id,
      created_at: submission.createdAt.toISOString(),
      email: submission.email,
      subject: submission.subject,
      message: submission.message,
      fields: submission.customFields.map(([name, value]) => ({ name, value })),
      files,
    },
  };
}
