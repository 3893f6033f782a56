// The notification email for a submission: a plain-text and an HTML part.
// Everything the sender wrote is escaped in the HTML part.
import type { Submission } from '../shared/db/entities.ts';
import { escapeHtml, htmlDocument } from '../shared/html.ts';
import type { FileInEmail } from './attachments.ts';

export type RenderedEmail = { subject: string; text: string; html: string };

export function renderSubmissionEmail(submission: Submission, files: FileInEmail[], linkTtlSeconds = 0): RenderedEmail {
  const received = submission.createdAt.toISOString();
  const rows: Array<[string, string]> = [
    ['From', submission.email],
    ...submission.customFields,
  ];
  const describe = ({ file }: FileInEmail) => `${file.filename} (${file.contentType}, ${file.size} bytes)`;
  const linkNote = files.some((entry) => entry.link)
    ? `The files are too large to attach; the links stay valid for ${Math.round(linkTtlSeconds / 86400 * 10) / 10} days.`
    : '';

  const text = [
    `New submission to your contact form.`,
    '',
    ...rows.map(([name, value]) => `${name}: ${value}`),
    '',
    'Message:',
    submission.message,
    '',
    ...(files.length
      ? ['Attachments:', ...files.map((entry) => `- ${describe(entry)}${entry.link ? `\n  ${entry.link}` : ''}`), ...(linkNote ? [linkNote] : []), '']
      : []),
    `Submission: ${submission.id}`,
    `Received: ${received}`,
  ].join('\n');

  const html = htmlDocument(`<p>New submission to your contact form.</p>
<table cellpadding="4" style="border-collapse:collapse">
${rows.map(([name, value]) => `<tr><th align="left" valign="top">${escapeHtml(name)}</th><td>${escapeHtml(value)}</td></tr>`).join('\n')}
</table>
<h3>Message</h3>
<p style="white-space:pre-wrap">${escapeHtml(submission.message)}</p>
${files.length ? `<h3>Attachments</h3><ul>${files.map((entry) => `<li>${entry.link ? `<a href="${escapeHtml(entry.link)}">${escapeHtml(describe(entry))}</a>` : escapeHtml(describe(entry))}</li>`).join('')}</ul>${linkNote ? `<p>${escapeHtml(linkNote)}</p>` : ''}` : ''}
<p style="color:#666;font-size:small">Submission ${escapeHtml(submission.id)} · received ${escapeHtml(received)}</p>`);

  return { subject: submission.subject, text, html };
}
