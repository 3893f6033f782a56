// The notification email for a submission: a plain-text and an HTML part.
// Everything the sender wrote is escaped in the HTML part.
import type { Attachment, Submission } from '../shared/db/entities.ts';
import { escapeHtml, htmlDocument } from '../shared/html.ts';

export type RenderedEmail = { subject: string; text: string; html: string };

export function renderSubmissionEmail(submission: Submission, attachments: Attachment[]): RenderedEmail {
  const received = submission.createdAt.toISOString();
  const rows: Array<[string, string]> = [
    ['From', submission.email],
    ...submission.customFields,
  ];
  const fileLines = attachments.map((file) => `${file.filename} (${file.contentType}, ${file.size} bytes)`);

  const text = [
    `New submission to your contact form.`,
    '',
    ...rows.map(([name, value]) => `${name}: ${value}`),
    '',
    'Message:',
    submission.message,
    '',
    ...(fileLines.length ? ['Attachments:', ...fileLines.map((line) => `- ${line}`), ''] : []),
    `Submission: ${submission.id}`,
    `Received: ${received}`,
  ].join('\n');

  const html = htmlDocument(`<p>New submission to your contact form.</p>
<table cellpadding="4" style="border-collapse:collapse">
${rows.map(([name, value]) => `<tr><th align="left" valign="top">${escapeHtml(name)}</th><td>${escapeHtml(value)}</td></tr>`).join('\n')}
</table>
<h3>Message</h3>
<p style="white-space:pre-wrap">${escapeHtml(submission.message)}</p>
${fileLines.length ? `<h3>Attachments</h3><ul>${fileLines.map((line) => `<li>${escapeHtml(line)}</li>`).join('')}</ul>` : ''}
<p style="color:#666;font-size:small">Submission ${escapeHtml(submission.id)} · received ${escapeHtml(received)}</p>`);

  return { subject: submission.subject, text, html };
}
