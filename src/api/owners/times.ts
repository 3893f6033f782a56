// Times as the console's pages print them without script: UTC, said plainly. The page's script
// (assets/owner.js) rewrites them in the reader's own zone and language with Intl.

/** "2026-11-26 12:26:51 UTC". */
export const utc = (iso: string) => `${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC`;

const UNITS: Array<[string, number]> = [
  ['year', 365 * 86_400],
  ['month', 30 * 86_400],
  ['week', 7 * 86_400],
  ['day', 86_400],
  ['hour', 3_600],
  ['minute', 60],
];

/** "5 minutes ago", "just now": how long before `now`, in its largest whole unit. */
export function ago(iso: string, now = Date.now()): string {
  const seconds = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  for (const [unit, size] of UNITS) {
    const count = Math.floor(seconds / size);
    if (count >= 1) return `${count} ${unit}${count === 1 ? '' : 's'} ago`;
  }
  return 'just now';
}

/** What a list shows of a message: its subject, or its first words when the visitor gave none. */
export function previewOf(record: { subject: string; message: string; email: string }, defaultSubject: string): string {
  if (record.subject && record.subject !== defaultSubject) return record.subject;
  const words = record.message.replace(/\s+/g, ' ').trim();
  return words.length > 90 ? `${words.slice(0, 90).replace(/\s+\S*$/, '')}…` : words || '(no message)';
}
