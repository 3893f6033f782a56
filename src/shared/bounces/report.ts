// Reads one message that came to a return path and says what it reports. `mailparser` takes the
// MIME apart (its `keepDeliveryStatus` keeps the report parts as parts); what the parts and the
// text say is read by ./classify.ts. Never throws: whatever the bytes, a verdict
// comes back.
import { simpleParser, type HeaderValue, type ParsedMail } from 'mailparser';
import { classifyMessage, type BounceVerdict } from './classify.ts';

export type { BounceVerdict } from './classify.ts';

export async function readReport(raw: Buffer, envelope: { sender: string }): Promise<BounceVerdict> {
  let mail: ParsedMail;
  try {
    mail = await simpleParser(raw, { keepDeliveryStatus: true, skipHtmlToText: true, skipTextToHtml: true, skipTextLinks: true, skipImageLinks: true });
  } catch (error) {
    return { type: 'ignored', reason: `not a readable message: ${(error as Error).message}` };
  }
  try {
    return classifyMessage(
      {
        parts: mail.attachments.map((part) => ({ contentType: part.contentType, text: () => part.content.toString('utf8') })),
        from: mail.from?.value[0]?.address ?? '',
        subject: mail.subject ?? '',
        autoSubmitted: headerText(mail.headers.get('auto-submitted')),
        autoReplyHeader: mail.headers.has('x-autoreply'),
        text: mail.text ?? '',
      },
      envelope.sender,
    );
  } catch (error) {
    return { type: 'ignored', reason: `not a readable report: ${(error as Error).message}` };
  }
}

/** A plain header's text; mailparser gives a header that came more than once as an array, read here joined by commas. */
function headerText(value: HeaderValue | undefined): string {
  if (typeof value === 'string') return value;
  return Array.isArray(value) ? value.filter((item) => typeof item === 'string').join(',') : '';
}
