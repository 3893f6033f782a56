// What a message that came back to a return path reports, once its MIME parts are apart
// (src/shared/bounces/report.ts takes them apart): the fields of a `message/delivery-status` (RFC 3464) or
// `message/feedback-report` (RFC 5965) part are header blocks, read here; a message without such a
// part is read as a bounce in prose, and only when a mail system sent it. No I/O: text in, verdict out.
import type { BounceType } from '../words/bounce-columns.ts';
import { oneLine } from '../infra/display-text.ts';

export type BounceVerdict =
  | { type: BounceType; status: string | null; diagnostic: string | null; reportingMta: string | null; recipient: string | null }
  | { type: 'ignored'; reason: string };

/** One part of the message; its text is read only when its type is a report's. */
export type MessagePart = { contentType: string; text: () => string };

/** A message taken apart: its parts, and what the prose reading needs of its headers and text. */
export type ReadMessage = {
  parts: MessagePart[];
  /** The From address, '' when there is none. */
  from: string;
  subject: string;
  /** The Auto-Submitted header, '' when there is none. */
  autoSubmitted: string;
  /** Whether an X-Autoreply header is present. */
  autoReplyHeader: boolean;
  /** The plain text body, '' when there is none. */
  text: string;
};

const DELIVERY_STATUS = new Set(['message/delivery-status', 'message/global-delivery-status']);
/** Per-recipient blocks read at most: a DSN names one recipient, a relay that batches a few. */
const MAX_BLOCKS = 100;
const MAX_DIAGNOSTIC = 1_000;
/** An enhanced status code (RFC 3463): class 2, 4 or 5. */
const ENHANCED = /\b([245])\.(\d{1,3})\.(\d{1,3})\b/;
const BASIC_REPLY = /(?:^|[\s:;(])([45])\d\d(?=[\s-])/m;

/** The verdict on a message sent to a return path by `sender` (the envelope's, '' for the null sender). */
export function classifyMessage(message: ReadMessage, sender: string): BounceVerdict {
  const status = message.parts.find((part) => DELIVERY_STATUS.has(part.contentType.toLowerCase()));
  if (status) return classifyDeliveryStatus(status.text());
  const feedback = message.parts.find((part) => part.contentType.toLowerCase() === 'message/feedback-report');
  if (feedback) return classifyFeedbackReport(feedback.text());
  return classifyPlainBounce(message, sender);
}

/** Header-style blocks separated by blank lines, folded lines unfolded, names lower-cased. */
function fieldBlocks(text: string): Array<Map<string, string>> {
  return text
    .replace(/\r\n?/g, '\n')
    .split(/\n[ \t]*\n/)
    .slice(0, MAX_BLOCKS + 1)
    .map((block) => {
      const fields = new Map<string, string>();
      for (const line of block.replace(/\n[ \t]+/g, ' ').split('\n')) {
        const colon = line.indexOf(':');
        if (colon > 0) fields.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
      }
      return fields;
    })
    .filter((fields) => fields.size > 0);
}

/** `dns; mx.example.com` → `mx.example.com`: the value without its type. */
const withoutType = (value: string | undefined) => (value === undefined ? null : value.replace(/^[\w-]+\s*;\s*/, '').trim() || null);
const clip = (value: string | null, max: number) => (value === null ? null : oneLine(value).replace(/\s+/g, ' ').trim().slice(0, max) || null);

function enhancedCode(text: string | undefined): string | null {
  const match = text ? ENHANCED.exec(text) : null;
  return match ? `${match[1]}.${Number(match[2])}.${Number(match[3])}` : null;
}

const ACTION_RANK: Record<string, number> = { failed: 3, delayed: 2, delivered: 1, relayed: 1, expanded: 1 };

/** The fields of a delivery-status part: the most severe recipient's action and status decide. */
export function classifyDeliveryStatus(text: string): BounceVerdict {
  const [perMessage, ...recipients] = fieldBlocks(text);
  // The first block is per message when it names the reporting MTA; some MTAs leave it out.
  const blocks = perMessage?.has('action') ? [perMessage, ...recipients] : recipients;
  const worst = blocks
    .filter((block) => block.has('action'))
    .sort((a, b) => (ACTION_RANK[b.get('action')!.toLowerCase()] ?? 0) - (ACTION_RANK[a.get('action')!.toLowerCase()] ?? 0))[0];
  if (!worst) return { type: 'ignored', reason: 'a delivery status without a recipient action' };
  const action = worst.get('action')!.toLowerCase();
  if (action !== 'failed' && action !== 'delayed') return { type: 'ignored', reason: `a success notification (${action})` };
  const diagnostic = withoutType(worst.get('diagnostic-code'));
  const status = enhancedCode(worst.get('status')) ?? enhancedCode(diagnostic ?? undefined);
  const basic = diagnostic ? BASIC_REPLY.exec(diagnostic)?.[1] : undefined;
  const soft = status ? status.startsWith('4') : basic === '4';
  const type: BounceType = action === 'delayed' ? 'delayed' : soft ? 'soft' : 'hard';
  return {
    type,
    status,
    diagnostic: clip(diagnostic, MAX_DIAGNOSTIC),
    reportingMta: clip(withoutType(perMessage?.get('reporting-mta') ?? worst.get('reporting-mta')), 255),
    recipient: clip(withoutType(worst.get('final-recipient') ?? worst.get('original-recipient')), 254),
  };
}

/** The fields of a feedback-report part: an abuse report is a complaint; other feedback is ignored. */
export function classifyFeedbackReport(text: string): BounceVerdict {
  const fields = new Map(fieldBlocks(text).flatMap((block) => [...block]));
  const feedbackType = (fields.get('feedback-type') ?? '').toLowerCase();
  if (feedbackType !== 'abuse') return { type: 'ignored', reason: `a feedback report of type ${feedbackType || 'unknown'}` };
  const source = fields.get('reporting-mta') ?? fields.get('user-agent') ?? null;
  return {
    type: 'complaint',
    status: null,
    diagnostic: clip(`abuse report${source ? ` from ${withoutType(source) ?? source}` : ''}`, MAX_DIAGNOSTIC),
    reportingMta: clip(withoutType(fields.get('reporting-mta')), 255),
    recipient: clip(withoutType(fields.get('original-rcpt-to') ?? fields.get('removal-recipient')), 254),
  };
}

const DAEMON = /^(mailer-daemon|postmaster|mail-daemon|mailerdaemon)@/i;
const AUTO_REPLY_SUBJECT = /\b(out of (the )?office|auto(matic)?[ -]?reply|vacation|abwesenheit|absence)\b/i;

/** A bounce in prose (no report part): best effort, and only from what sends bounces. */
export function classifyPlainBounce(message: Omit<ReadMessage, 'parts'>, sender: string): BounceVerdict {
  if (sender !== '' && !DAEMON.test(message.from) && !DAEMON.test(sender))
    return { type: 'ignored', reason: 'not from a mail system (a person or an auto-reply)' };
  if (message.autoSubmitted.toLowerCase().startsWith('auto-replied') || message.autoReplyHeader || AUTO_REPLY_SUBJECT.test(message.subject)) {
    return { type: 'ignored', reason: 'an auto-reply' };
  }
  const text = message.text.slice(0, 64 * 1024);
  const line = text.split(/\r?\n/).find((candidate) => ENHANCED.test(candidate) && !/^\s*2\./.test(ENHANCED.exec(candidate)![0]));
  const status = line ? enhancedCode(line) : null;
  if (status && !status.startsWith('2')) {
    return { type: status.startsWith('4') ? 'soft' : 'hard', status, diagnostic: clip(line!, MAX_DIAGNOSTIC), reportingMta: null, recipient: null };
  }
  const reply = text.split(/\r?\n/).find((candidate) => /^\s*[45]\d\d[\s-]/.test(candidate));
  if (reply) {
    return { type: reply.trim().startsWith('4') ? 'soft' : 'hard', status: null, diagnostic: clip(reply, MAX_DIAGNOSTIC), reportingMta: null, recipient: null };
  }
  return { type: 'ignored', reason: 'not recognised as a bounce' };
}
