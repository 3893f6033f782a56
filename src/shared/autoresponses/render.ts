// The autoresponse's email, built from the owner's words only: their subject and plain text, the
// key's name and the date. Nothing a visitor wrote goes in: an autoresponse that echoed a
// submission would let anyone send any text to any address under this service's name. The HTML part
// is the text escaped, its paragraphs as <p>, bare https links made links; no HTML of the owner's.

export type AutoresponseContent = { subject: string; text: string; label: string | null; receivedAt: Date };
export type RenderedAutoresponse = { subject: string; text: string; html: string };

const escapeHtml = (text: string) =>
  text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;').replaceAll("'", '&#39;');

/** A bare https link; trailing punctuation belongs to the sentence, not the link. */
const LINK = /https:\/\/[^\s<>"']+[^\s<>"'.,;:!?)\]]/g;

function linkified(line: string): string {
  let html = '';
  let at = 0;
  for (const match of line.matchAll(LINK)) {
    html += escapeHtml(line.slice(at, match.index)) + `<a href="${escapeHtml(match[0])}">${escapeHtml(match[0])}</a>`;
    at = match.index + match[0].length;
  }
  return html + escapeHtml(line.slice(at));
}

const day = (date: Date) => date.toISOString().slice(0, 10);

/** The closing line: which form, and when (UTC day). */
function closing(content: AutoresponseContent): string {
  const form = content.label ? ` through "${content.label}"` : '';
  return `This is an automatic reply to the message you sent${form} on ${day(content.receivedAt)} (UTC).`;
}

export function renderAutoresponse(content: AutoresponseContent): RenderedAutoresponse {
  const paragraphs = content.text
    .split(/\n\s*\n/)
    .map((paragraph) => paragraph.trim())
    .filter(Boolean);
  const text = `${paragraphs.join('\n\n')}\n\n-- \n${closing(content)}\n`;
  const html = [
    ...paragraphs.map((paragraph) => `<p>${paragraph.split('\n').map(linkified).join('<br>\n')}</p>`),
    `<hr>\n<p><small>${escapeHtml(closing(content))}</small></p>`,
  ].join('\n');
  return { subject: content.subject, text, html: `<!doctype html>\n<html><body>\n${html}\n</body></html>\n` };
}
