// What a chat message tells of a submission, before any platform's format: the sender, the
// subject, the message, the fields as the owner's email shows them (the key's email layout: its
// hidden fields left out, its ordered ones first, the rest in the form's order), the files by name,
// whether it was held as spam, and the link to it in the owner console. Every text a visitor wrote
// is cleaned here (./chat-text.ts) and its mentions defused; each platform then escapes its own markup.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Attachment, Submission } from '../../../shared/submissions/entities.ts';
import type { VerificationKey } from '../../../shared/keys/entities.ts';
import { findAttachments } from '../../../shared/submissions/submissions.ts';
import { arrangeFields } from '../../../shared/keys/email-layout.ts';
import { cleanLine, cleanText, defuseMentions } from './chat-text.ts';

export type ChatNotice = {
  /** The service's own first line: "New message" ("Test message" for the owner's test), with the key's label when it has one. */
  headline: string;
  /** The sender's name (a field called `name`), defused; null when the form sent none. */
  senderName: string | null;
  /** The sender's address as validated at intake: one `@`, inside the word, no markup of its own beyond punctuation. */
  senderEmail: string;
  subject: string;
  message: string;
  fields: Array<{ name: string; value: string }>;
  files: Array<{ name: string; size: number }>;
  /** Held as spam and posted all the same (the key sends spam to its webhooks): its score, if any. */
  spam: { score: number | null } | null;
  consoleUrl: string;
  createdAt: Date;
};

type NoticeSource = Pick<
  Submission,
  'id' | 'email' | 'subject' | 'message' | 'customFields' | 'spamVerdict' | 'spamScore' | 'spamMark' | 'createdAt' | 'test'
> & {
  key: Pick<VerificationKey, 'label' | 'emailFieldOrder' | 'emailHiddenFields'>;
};

/** The notice of a submission; the files are read from their rows, never from storage. */
export async function loadChatNotice(em: EntityManager, submission: NoticeSource, publicUrl: string): Promise<ChatNotice> {
  const files = (await findAttachments(em, submission.id)).map((file) => {
    const note = chatScanNote(file);
    return { name: file.filename, size: file.size, ...(note ? { note } : {}) };
  });
  return chatNotice(submission, files, publicUrl);
}

/** The virus scan's word on a file, short, after its name (src/shared/files); none for a clean file or with scanning off. */
function chatScanNote(file: Pick<Attachment, 'scanOutcome' | 'scanDetail'>): string | undefined {
  if (file.scanOutcome === 'infected') return `withheld: infected, ${file.scanDetail ?? 'unnamed signature'}`;
  if (file.scanOutcome === 'unscanned') return 'not scanned for viruses';
  if (file.scanOutcome === 'too_large_to_scan') return 'too large to scan for viruses';
  return undefined;
}

export function chatNotice(submission: NoticeSource, files: Array<{ name: string; size: number; note?: string }>, publicUrl: string): ChatNotice {
  const line = (value: string) => defuseMentions(cleanLine(value));
  const name = submission.customFields.find(([field]) => field.trim().toLowerCase() === 'name')?.[1];
  const label = submission.key.label ? cleanLine(submission.key.label) : '';
  const held = submission.spamVerdict === 'spam' && submission.spamMark !== 'ham';
  // A test message from the owner console says so first, on every platform.
  const kind = submission.test ? 'Test message' : 'New message';
  return {
    headline: label ? `${kind} to ${defuseMentions(label)}` : kind,
    senderName: name && cleanLine(name) ? line(name) : null,
    senderEmail: cleanLine(submission.email),
    subject: line(submission.subject) || '(no subject)',
    message: defuseMentions(cleanText(submission.message)).trim() || '(no message)',
    fields: arrangeFields(submission.customFields, { fieldOrder: submission.key.emailFieldOrder, hiddenFields: submission.key.emailHiddenFields }).map(
      ([field, value]) => ({
        name: line(field) || '(unnamed)',
        value: defuseMentions(cleanText(value)).trim() || '(empty)',
      }),
    ),
    files: files.map((file) => ({ name: `${line(file.name) || '(unnamed)'}${file.note ? ` [${line(file.note)}]` : ''}`, size: file.size })),
    spam: held ? { score: submission.spamScore ?? null } : null,
    consoleUrl: `${publicUrl}/owner/submissions/${submission.id}`,
    createdAt: submission.createdAt,
  };
}

/** The sender as one line: `Name <address>`, or the address alone. */
export const senderLine = (notice: Pick<ChatNotice, 'senderName' | 'senderEmail'>) =>
  notice.senderName ? `${notice.senderName} <${notice.senderEmail}>` : notice.senderEmail;

/** A file's size in words: bytes, KB or MB. */
export function sizeInWords(bytes: number): string {
  if (bytes < 1024) return `${bytes} bytes`;
  if (bytes < 1024 * 1024) return `${Math.round(bytes / 1024)} KB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}

/** The held-as-spam line, when it applies. */
export const spamLine = (notice: Pick<ChatNotice, 'spam'>) =>
  notice.spam
    ? `Held as spam${notice.spam.score === null ? '' : ` (score ${notice.spam.score})`}: not emailed to you. Mark it not spam in the console to have it emailed.`
    : '';
