// The notification email for a submission: a plain-text and an HTML part.
// Everything the sender wrote is escaped in the HTML part.
import type { Submission } from '../shared/db/entities.ts';
import { withoutBidiControls, oneLine } from '../shared/display-text.ts';
import { escapeHtml, htmlDocument } from '../shared/html.ts';
import type { FileInEmail } from './attachments.ts';

export type RenderedEmail = { subject: string; text: string; html: string };

export function renderSubmissionEmail(submission: Submission, files: FileInEmail[], linkTtlSeconds = 0): RenderedEmail {
  const received = submission.createdAt.toISOString();
  // The sender chooses field names and values: a field called `From`, or a value with line
  // breaks, must not pass for a line of ours. Our lines sit at the left margin, above everything
  // the sender wrote; the sender's text is indented (every line) and names are kept on one line.
  const fields = submission.customFields.map(([name, value]) => [oneLine(name), withoutBidiControls(value)] as const);
  const message = withoutBidiControls(submission.message);
  const describe = ({ file }: FileInEmail) => `${oneLine(file.filename)} (${file.contentType}, ${file.size} bytes)`;
  const linkNote = files.some((entry) => entry.link)
    ? `The files are too large to attach; the links stay valid for ${Math.round(linkTtlSeconds / 86400 * 10) / 10} days.`
    : '';

  const text = [
    `New submission to your contact form.`,
    '',
    `From: ${submission.email}`,
    `Submission: ${submission.id}`,
    `Received: ${received}`,
    '',
    ...(fields.length ? ['Fields, as the sender filled them in:', ...fields.map(([name, value]) => indented(`${name}: ${value}`)), ''] : []),
    'Message:',
    indented(message),
    '',
    ...(files.length
      ? ['Attachments:', ...files.map((entry) => indented(`- ${describe(entry)}${entry.link ? `\n  ${entry.link}` : ''}`)), ...(linkNote ? [linkNote] : [])]
      : []),
  ].join('\n').trimEnd();

  const row = (name: string, value: string) =>
    `<tr><th align="left" valign="top">${escapeHtml(name)}</th><td style="white-space:pre-wrap">${escapeHtml(value)}</td></tr>`;
  const html = htmlDocument(`<p>New submission to your contact form.</p>
<table cellpadding="4" style="border-collapse:collapse">
${row('From', submission.email)}
</table>
${fields.length ? `<h3>Fields, as the sender filled them in</h3>
<table cellpadding="4" style="border-collapse:collapse;border-left:3px solid #ccc">
${fields.map(([name, value]) => row(name, value)).join('\n')}
</table>` : ''}
<h3>Message</h3>
<p style="white-space:pre-wrap;border-left:3px solid #ccc;padding-left:8px">${escapeHtml(message)}</p>
${files.length ? `<h3>Attachments</h3><ul>${files.map((entry) => `<li>${entry.link ? `<a href="${escapeHtml(entry.link)}">${escapeHtml(describe(entry))}</a>` : escapeHtml(describe(entry))}</li>`).join('')}</ul>${linkNote ? `<p>${escapeHtml(linkNote)}</p>` : ''}` : ''}
<p style="color:#666;font-size:small">Submission ${escapeHtml(submission.id)} · received ${escapeHtml(received)}</p>`);

  return { subject: withoutBidiControls(submission.subject), text, html };
}

/** Every line two spaces in: the sender's text, set apart from the lines of the service. */
const indented = (value: string) =>
  value
    .split(/\r\n|[\n\r\u2028\u2029]/)
    .map((line) => `  ${line}`)
    .join('\n');
