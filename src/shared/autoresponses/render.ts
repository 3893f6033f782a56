// The autoresponse's email, built from the owner's words only: their subject and plain text, the
// key's name and the date. Nothing a visitor wrote goes in: an autoresponse that echoed a
// submission would let anyone send any text to any address under this service's name. The HTML part
// is the text escaped, its paragraphs as <p>, bare https links made links; no HTML of the owner's.
import { withoutBidiControls } from '../keys/owner-text.ts';

export type AutoresponseContent = { subject: string; text: string; label: string | null; receivedAt: Date };
/** A piece of a line: text, or a bare https link. */
export type Part = { text: string } | { link: string };
/** The text as the HTML part shows it: paragraphs of lines of parts (the console's preview draws the same). */
export type Paragraphs = Part[][][];
export type RenderedAutoresponse = { subject: string; text: string; html: string; paragraphs: Paragraphs; closing: string };

const escapeHtml = (text: string) =>
  text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;').replaceAll("'", '&#39;');

/** A bare https link; trailing punctuation belongs to the sentence, not the link. */
const LINK = /https:\/\/[^\s<>"']+[^\s<>"'.,;:!?)\]]/g;

function partsOf(line: string): Part[] {
  const parts: Part[] = [];
  let at = 0;
  for (const match of line.matchAll(LINK)) {
    if (match.index > at) parts.push({ text: line.slice(at, match.index) });
    parts.push({ link: match[0] });
    at = match.index + match[0].length;
  }
  if (at < line.length) parts.push({ text: line.slice(at) });
  return parts;
}

const partHtml = (part: Part) => ('link' in part ? `<a href="${escapeHtml(part.link)}">${escapeHtml(part.link)}</a>` : escapeHtml(part.text));

const day = (date: Date) => date.toISOString().slice(0, 10);

/** The closing line: which form, and when (UTC day). */
function closing(content: AutoresponseContent): string {
  // A label saved before bidi controls were refused: none of them reaches a visitor.
  const form = content.label ? ` through "${withoutBidiControls(content.label)}"` : '';
  return `This is an automatic reply to the message you sent${form} on ${day(content.receivedAt)} (UTC).`;
}

export function renderAutoresponse(content: AutoresponseContent): RenderedAutoresponse {
  const texts = content.text
    .split(/\n\s*\n/)
    .map((paragraph) => paragraph.trim())
    .filter(Boolean);
  const paragraphs = texts.map((paragraph) => paragraph.split('\n').map(partsOf));
  const ending = closing(content);
  const text = `${texts.join('\n\n')}\n\n-- \n${ending}\n`;
  const html = [
    ...paragraphs.map((lines) => `<p>${lines.map((line) => line.map(partHtml).join('')).join('<br>\n')}</p>`),
    `<hr>\n<p><small>${escapeHtml(ending)}</small></p>`,
  ].join('\n');
  return { subject: content.subject, text, html: `<!doctype html>\n<html><body>\n${html}\n</body></html>\n`, paragraphs, closing: ending };
}
