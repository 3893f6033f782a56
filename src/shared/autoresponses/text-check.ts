// The owner's autoresponse checked as mail, before it is saved (API) and before each one is sent
// (worker): links only to the key's domains (./text-links.ts), and the spam filter's score under
// the shared statistics only, which no single owner's marks can teach. A filter that does not
// answer says nothing here: the caller decides what waiting costs.
import type { SpamFilter } from '../spam/spam-filter.ts';
import { linksOutside } from './text-links.ts';

export type AutoresponseText = { subject: string; text: string; ownerEmail: string; ownerMailbox: string };

/** Why the text may not go; undefined when it may. */
export type TextRefusal = { field: 'autoresponse.text'; message: string };

/** The refusal for links outside the key's domains; undefined when there are none. */
export function linkRefusal(text: Pick<AutoresponseText, 'subject' | 'text'>, domains: readonly string[]): TextRefusal | undefined {
  const outside = linksOutside(`${text.subject}\n${text.text}`, domains);
  if (!outside.length) return undefined;
  const where = domains.length ? `only to this key's domains (${domains.join(', ')})` : 'none for a key without domains';
  return { field: 'autoresponse.text', message: `An autoresponse links ${where}; it links to ${outside.slice(0, 3).join(', ')}.` };
}

/** The filter's word on the text: a refusal when it scores as spam; throws when the filter does not answer. */
export async function spamRefusal(
  filter: SpamFilter,
  text: AutoresponseText,
  settings: { mailFrom: string; threshold: number; timeoutMs: number },
): Promise<TextRefusal | undefined> {
  const scan = await filter.check(
    {
      mailFrom: settings.mailFrom,
      ownerEmail: text.ownerEmail,
      ownerMailbox: text.ownerMailbox,
      visitorEmail: text.ownerEmail,
      subject: text.subject,
      message: text.text,
      customFields: [],
      filenames: [],
      ownerStatistics: false,
    },
    settings.timeoutMs,
  );
  if (scan.score < settings.threshold) return undefined;
  return { field: 'autoresponse.text', message: 'The spam filter reads this autoresponse as spam: write it as a plain note to the person who wrote.' };
}
