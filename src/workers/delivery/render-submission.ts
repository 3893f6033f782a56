// The notification email for a submission: a plain-text and an HTML part, from
// src/workers/delivery/templates/submission.*.njk (the HTML part escapes everything by default).
// The sender chooses field names and values: a field called `From`, or a value with line breaks,
// must not pass for a line of ours. Our lines sit at the left margin, above everything the sender
// wrote; in the text part the sender's text is indented (every line) and names kept on one line.
import type { Submission } from '../../shared/submissions/entities.ts';
import { headerText, oneLine, withoutBidiControls } from '../../shared/infra/display-text.ts';
import type { FileInEmail } from './attachments.ts';
import { arrangeFields, DEFAULT_EMAIL_LAYOUT, renderSubjectPattern, type EmailLayout } from '../../shared/keys/email-layout.ts';
import { renderEmail, type RenderedEmail } from './email-templates.ts';

export type { RenderedEmail } from './email-templates.ts';

/** What the email shows of a submission. */
export type SubmissionForEmail = Pick<Submission, 'id' | 'email' | 'message' | 'subject' | 'customFields' | 'createdAt'>;

/** What starts the subject of a test message's emails (the owner's and the copies), whatever the key's pattern. */
export const TEST_SUBJECT_PREFIX = '[Test] ';

/**
 * The subject of a key's email: the owner's pattern when there is one; else the message's own, after
 * the key's label when its owner asked for it (one inbox, several forms told apart at a glance).
 * A test message's starts with TEST_SUBJECT_PREFIX.
 */
export function submissionSubject(
  submission: Pick<Submission, 'subject' | 'email' | 'customFields' | 'test'>,
  key: { pattern: string | null; label: string | null; subjectLabel: string | null },
): string {
  const test = submission.test ? TEST_SUBJECT_PREFIX : '';
  // A pattern of placeholders all empty gives nothing: the message's own subject then.
  if (key.pattern) return `${test}${renderSubjectPattern(key.pattern, { ...submission, key: key.label }) || submission.subject}`;
  return `${test}${key.subjectLabel ? `[${key.subjectLabel}] ${submission.subject}` : submission.subject}`;
}

/**
 * A copy for one of the key's added recipients (src/shared/recipients): it says whose form it came
 * through and how to receive no more; the owner's own email has neither.
 */
export type CopyNote = { owner: string; stopLink: string };

export function renderSubmissionEmail(
  submission: SubmissionForEmail,
  files: FileInEmail[],
  linkTtlSeconds = 0,
  layout: Pick<EmailLayout, 'fieldOrder' | 'hiddenFields' | 'files'> = DEFAULT_EMAIL_LAYOUT,
  copy?: CopyNote,
): RenderedEmail {
  const fields = arrangeFields(submission.customFields, layout).map(([rawName, rawValue]) => {
    const [name, value] = [oneLine(rawName), withoutBidiControls(rawValue)];
    return { name, value, text: indented(`${name}: ${value}`) };
  });
  const message = withoutBidiControls(submission.message);
  // The name the attachment carries (a header's, decoded as the owner's client would).
  const label = ({ file }: FileInEmail) => `${headerText(file.filename)} (${file.contentType}, ${file.size} bytes)`;
  return renderEmail('submission', headerText(submission.subject), {
    from: submission.email,
    id: submission.id,
    received: submission.createdAt.toISOString(),
    fields,
    message,
    message_text: indented(message),
    files: files.map((entry) => ({
      label: label(entry),
      link: entry.link ?? '',
      note: entry.note ?? '',
      text: indented(`- ${label(entry)}${entry.note ? `\n  ${entry.note}` : ''}${entry.link ? `\n  ${entry.link}` : ''}`),
    })),
    link_note: files.some((entry) => entry.link)
      ? linkNote(
          layout.files,
          linkTtlSeconds,
          files.some((entry) => entry.link && !entry.scanLinked),
        )
      : '',
    copy: copy ? { owner: copy.owner, stop_link: copy.stopLink } : null,
  });
}

/**
 * Why the files are links (the owner's setting, or their size; a file linked because of the virus
 * scan says so in its own note) and for how long the links work.
 */
function linkNote(mode: EmailLayout['files'], linkTtlSeconds: number, bySize: boolean): string {
  const days = `${Math.round((linkTtlSeconds / 86400) * 10) / 10} days`;
  if (!bySize) return `The links stay valid for ${days}.`;
  const why = mode === 'link' ? "This form's settings send files as links" : 'The files are too large to attach';
  return `${why}; the links stay valid for ${days}.`;
}

/** Every line two spaces in: the sender's text, set apart from the lines of the service. */
const indented = (value: string) =>
  value
    .split(/\r\n|[\n\r\u2028\u2029]/)
    .map((line) => `  ${line}`)
    .join('\n');
