// The body of a webhook, per event (their JSON Schemas: src/api/webhooks/webhooks-openapi.ts). In
// `submission.created` files travel as presigned links, made fresh for each attempt;
// `submission.bounced` carries the bounce as the row has it when the attempt is made.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Submission } from '../../shared/submissions/entities.ts';
import type { WebhookEvent } from '../../shared/webhooks/entities.ts';
import { bounceRecord, spamRecord, findAttachments } from '../../shared/submissions/submissions.ts';
import { withoutBidiControls } from '../../shared/infra/display-text.ts';
import type { Storage } from '../../shared/infra/storage.ts';
import { fileHandling, scanRecord } from '../../shared/files/files.ts';

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
    /**
     * `scan`: the virus scan's outcome (null: scanning off). An infected file is withheld: no `url`
     * (null), its signature in `scan.detail`.
     */
    files: Array<{
      name: string;
      type: string;
      size: number;
      sha256: string;
      url: string | null;
      url_expires_at: string | null;
      scan: ReturnType<typeof scanRecord>;
    }>;
    /** The spam filter's verdict and the owner's mark; null when not checked (the filter off, or the email not to be sent: see webhookSpamGate). */
    spam: ReturnType<typeof spamRecord>;
    /** A test message the owner sent from the console, not a visitor's. */
    test: boolean;
  };
};

/** The event no longer holds: retrying will not change that, and the endpoint is not at fault. */
export class StaleEventError extends Error {}

export type SubmissionBounced = {
  type: 'submission.bounced';
  timestamp: string;
  data: { id: string; created_at: string; email: string; subject: string; bounce: NonNullable<ReturnType<typeof bounceRecord>> };
};

export async function buildPayload(
  em: EntityManager,
  storage: Storage,
  event: WebhookEvent,
  submission: Submission,
  linkTtlSeconds: number,
): Promise<SubmissionCreated | SubmissionBounced> {
  if (event === 'submission.bounced') return bouncedPayload(submission);
  return createdPayload(em, storage, submission, linkTtlSeconds);
}

function bouncedPayload(submission: Submission): SubmissionBounced {
  const bounce = bounceRecord(submission);
  // The owner re-sent the email before this event went out: the bounce it reported is forgotten.
  if (!bounce) throw new StaleEventError('the email was re-sent since it bounced; nothing to report');
  return {
    type: 'submission.bounced',
    timestamp: new Date().toISOString(),
    data: { id: submission.id, created_at: submission.createdAt.toISOString(), email: submission.email, subject: submission.subject, bounce },
  };
}

async function createdPayload(em: EntityManager, storage: Storage, submission: Submission, linkTtlSeconds: number): Promise<SubmissionCreated> {
  const stored = await findAttachments(em, submission.id);
  const expires = new Date(Date.now() + linkTtlSeconds * 1000).toISOString();
  const files = await Promise.all(
    stored.map(async (file) => {
      const withheld = fileHandling(file) === 'withhold';
      return {
        name: withoutBidiControls(file.filename),
        type: file.contentType,
        size: file.size,
        sha256: file.sha256,
        url: withheld ? null : await storage.presign(file.storageKey, withoutBidiControls(file.filename), linkTtlSeconds, file.contentType),
        url_expires_at: withheld ? null : expires,
        scan: scanRecord(file),
      };
    }),
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
      spam: spamRecord(submission),
      test: submission.test,
    },
  };
}
