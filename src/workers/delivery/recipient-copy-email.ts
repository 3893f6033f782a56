// The recipient-copy job: the copy of a submission's email to one of its key's added recipients
// (src/shared/recipients), sent like every email of this service (claim, send, record; retried on
// its own), with a return path of its own so that what comes back is this copy's and counts against
// this address only. The same email as the owner's, but for its first line and a last one that
// says how to receive no more; Reply-To is the visitor, as in the owner's.
import { UnrecoverableError, type Job } from 'bullmq';
import type { ConsentSigner } from '../../shared/keys/consent.ts';
import { findCopyToSend } from '../../shared/recipients/recipients.ts';
import { submissionSuppression } from '../../shared/bounces/suppression.ts';
import type { Storage } from '../../shared/infra/storage.ts';
import type { DeliveryJobs } from '../../shared/deliveries/delivery-jobs.ts';
import { findAttachments } from '../../shared/submissions/submissions.ts';
import { claimOnly, sendTracked, SuppressedError, type SendContext, type SendOutcome } from './send.ts';
import { submissionMessage, type SubmissionSettings } from './submission-message.ts';
import { scanSubmissionFiles } from '../../shared/files/files.ts';

type CopyContext = SendContext & SubmissionSettings & { storage: Storage; consent: ConsentSigner; publicUrl: string };

export async function deliverRecipientCopy(context: CopyContext, job: Job<DeliveryJobs['recipient-copy']>): Promise<SendOutcome> {
  const { copyId } = job.data;
  return sendTracked(context, 'recipient-copy', copyId, job, claimOnly(context, 'recipient-copy', copyId), async () => {
    // Deleted with its submission: a claim of it finds nothing, so this is a row gone mid-attempt.
    const copy = await findCopyToSend(context.em, copyId);
    if (!copy) throw new UnrecoverableError(`copy ${copyId} is gone`);
    // Removed by the owner (or by the address itself) since the copy was made: nothing more goes to it.
    if (copy.recipientId === null || !copy.confirmed) throw new SuppressedError("not attempted: this address is no longer one of the key's recipients");
    const suppressed = submissionSuppression(copy);
    if (suppressed) throw new SuppressedError(suppressed);
    const { submission } = copy;
    const found = submission.attachmentCount === 0 ? [] : await findAttachments(context.em, submission.id);
    // Scanned by the owner's email before this copy was made; a file still without an outcome is scanned here.
    const stored = await scanSubmissionFiles(context, context.fileScan, submission, found);
    const stopLink = context.consent.recipientLink(context.publicUrl, copy.recipientId);
    const key = { layout: copy.layout, label: copy.keyLabel, subjectLabel: copy.subjectLabel };
    return submissionMessage(context, submission, stored, key, {
      kind: 'recipient-copy',
      id: copyId,
      to: copy.email,
      copy: { owner: copy.ownerEmail, stopLink },
      // The page where this address can stop the copies (a button there; opening it changes nothing),
      // and RFC 8058's one-click: a mail client's POST to that link removes the address at once.
      headers: { 'List-Unsubscribe': `<${stopLink}>`, 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' },
    });
  });
}
