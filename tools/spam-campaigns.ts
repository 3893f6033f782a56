// `npm run bench:spam-campaigns`: how the campaign fingerprints (src/shared/campaign-fingerprint.ts)
// match on the SMS Spam Collection (5,574 labelled short messages; bench/data). As if every spam
// message had been marked spam by owners of 3 mailboxes: how much spam another message of its
// campaign would hold, and how much ham would be held. Also what the bands cost: how many stored
// fingerprints a check compares (those sharing a band), and how many near-identical pairs the bands
// miss (pairs whose values mostly agree, found by comparing every pair).
import { readSmsCollection } from '../bench/support/spam-samples.ts';
import { agreement, campaignFingerprint, MATCHING, type Fingerprint } from '../src/shared/campaign-fingerprint.ts';

type Entry = { index: number; spam: boolean; text: string; fingerprint: Fingerprint };

const messages = readSmsCollection();
const entries: Entry[] = [];
for (const [index, message] of messages.entries()) {
  const fingerprint = campaignFingerprint(message.text);
  if (fingerprint) entries.push({ index, spam: message.spam, text: message.text, fingerprint });
}
const byBand = new Map<number, Entry[]>();
for (const entry of entries) {
  for (const band of new Set(entry.fingerprint.bands)) byBand.set(band, [...(byBand.get(band) ?? []), entry]);
}

/** The other messages sharing a band with `entry`: what the index hands the check to compare. */
function candidates(entry: Entry): Set<Entry> {
  const found = new Set<Entry>();
  for (const band of entry.fingerprint.bands) for (const other of byBand.get(band) ?? []) if (other !== entry) found.add(other);
  return found;
}

const percent = (part: number, whole: number) => `${((100 * part) / whole).toFixed(2)} %`;
const spam = entries.filter((entry) => entry.spam);
const ham = entries.filter((entry) => !entry.spam);
let compared = 0;
let spamMatched = 0;
let hamMatched = 0;
const hamExamples: string[] = [];
for (const entry of entries) {
  const found = [...candidates(entry)];
  compared += found.length;
  const matches = found.filter((other) => other.spam && agreement(entry.fingerprint, other.fingerprint) >= MATCHING);
  if (entry.spam && matches.length) spamMatched += 1;
  if (!entry.spam && matches.length) {
    hamMatched += 1;
    if (hamExamples.length < 5) hamExamples.push(`  ham:  ${entry.text.slice(0, 100)}\n  spam: ${matches[0]!.text.slice(0, 100)}`);
  }
}
// Every pair compared, for the near-identical pairs that share no band.
let pairs = 0;
let missed = 0;
for (let a = 0; a < entries.length; a += 1) {
  const found = candidates(entries[a]!);
  for (let b = a + 1; b < entries.length; b += 1) {
    if (agreement(entries[a]!.fingerprint, entries[b]!.fingerprint) < MATCHING) continue;
    pairs += 1;
    if (!found.has(entries[b]!)) missed += 1;
  }
}

process.stdout.write(
  [
    `messages: ${messages.length}, long enough for a fingerprint: ${entries.length} (spam ${spam.length} of ${messages.filter((m) => m.spam).length}, ham ${ham.length})`,
    `spam near-identical to another spam message: ${spamMatched} (${percent(spamMatched, spam.length)} of fingerprinted spam)`,
    `ham near-identical to a spam message: ${hamMatched} (${percent(hamMatched, ham.length)} of fingerprinted ham)`,
    ...hamExamples,
    `fingerprints compared per check: ${(compared / entries.length).toFixed(2)} of ${entries.length}`,
    `near-identical pairs: ${pairs}, sharing no band (missed): ${missed}`,
    '',
  ].join('\n'),
);
