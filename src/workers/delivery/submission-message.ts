// The email of a submission, one sequence for everyone who receives it: its files prepared (attached
// while they fit, else signed links, or always links when the key's layout says so), its subject
// from the key's pattern or label, its parts rendered, and the message around them, Reply-To the
// visitor. The owner's email (./submission-email.ts) and a copy to an added recipient
// (./recipient-copy-email.ts) differ only in what they hand in: the addressee, whose row's
// Message-ID it carries, a copy's note (whose form, how to stop) and its headers.
import type Mail from 'nodemailer/lib/mailer/index.js';
import type { Attachment, Submission } from '../../shared/submissions/entities.ts';
import type { EmailLayout } from '../../shared/keys/email-layout.ts';
import type { Storage } from '../../shared/infra/storage.ts';
import { messageIdFor, type DeliveryKindName } from '../../shared/deliveries/delivery-kinds.ts';
import { prepareFiles } from './attachments.ts';
import type { FileScanSettings } from '../../shared/files/files.ts';
import { renderSubmissionEmail, submissionSubject, type CopyNote, type SubmissionForEmail } from './render-submission.ts';

/** What the submission email needs of the configuration. `fileScan`: undefined when files are not scanned (src/shared/files). */
export type SubmissionSettings = { mailFrom: string; attachMaxBytes: number; linkTtlSeconds: number; fileScan: FileScanSettings | undefined };

/** The key's say in its email: its layout, and its label for the subject. */
export type KeyLayout = { layout: EmailLayout; label: string | null; subjectLabel: string | null };

/** Who receives this email of the submission, and what sets it apart. */
export type Addressee = {
  /** The row the email is sent for (the owner's: the submission; a copy: its own), which names its Message-ID. */
  kind: Extract<DeliveryKindName, 'submission' | 'recipient-copy'>;
  id: string;
  to: string;
  /** A copy's first and last lines; the owner's email has none. */
  copy?: CopyNote;
  headers?: Record<string, string>;
};

/** The message for `addressee`, and what closes the file streams a failed send leaves open. */
export async function submissionMessage(
  context: SubmissionSettings & { storage: Storage },
  submission: SubmissionForEmail & Pick<Submission, 'test'>,
  stored: Attachment[],
  key: KeyLayout,
  addressee: Addressee,
): Promise<{ message: Mail.Options; release: () => void }> {
  const files = await prepareFiles(stored, context.storage, {
    // link: every file a signed link, whatever its size (no total is at most -1 byte).
    attachMaxBytes: key.layout.files === 'link' ? -1 : context.attachMaxBytes,
    linkTtlSeconds: context.linkTtlSeconds,
  });
  const subject = submissionSubject(submission, { pattern: key.layout.subject, label: key.label, subjectLabel: key.subjectLabel });
  const email = renderSubmissionEmail({ ...submission, subject }, files.listed, context.linkTtlSeconds, key.layout, addressee.copy);
  return {
    message: {
      from: context.mailFrom,
      to: addressee.to,
      replyTo: submission.email,
      subject: email.subject,
      text: email.text,
      html: email.html,
      attachments: files.attachments,
      messageId: messageIdFor(addressee.kind, addressee.id, context.mailFrom),
      ...(addressee.headers ? { headers: addressee.headers } : {}),
    },
    release: files.release,
  };
}
