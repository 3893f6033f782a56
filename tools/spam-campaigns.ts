// `npm run bench:spam-campaigns`: how the campaign fingerprints (src/shared/spam/campaign-fingerprint.ts)
// match on the SMS Spam Collection (5,574 labelled short messages; bench/data). As if every spam
// message had been marked spam by owners of 3 mailboxes: how much spam another message of its
// campaign would hold, and how much ham would be held. Also what the bands cost: how many stored
// fingerprints a check compares (those sharing a band), and how many near-identical pairs the bands
// miss (pairs whose values mostly agree, found by comparing every pair). Then, on a throwaway
// PostgreSQL holding VOTES votes (30 days of a large installation's marks), what the check's one
// query costs.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { readSmsCollection } from '../bench/support/spam-samples.ts';
import { startPostgres } from '../src/local/services.ts';
import { agreement, campaignFingerprint, MATCHING, type Fingerprint } from '../src/shared/spam/campaign-fingerprint.ts';
import { createOrm, migrate } from '../src/shared/infra/db/orm.ts';
import { entities } from '../src/shared/schema.ts';
import { campaignVotes } from '../src/shared/spam/spam-campaigns.ts';

const VOTES = 100_000;
const MAILBOXES = 5_000;
const TIMED_CHECKS = 2_000;

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

// The votes: the corpus's messages over and over (each with one more word, so that no two are the
// same text; every vote finds the many others of its message), and as many of random words.
let state = 20_261_126;
const random = () => (state = (state * 1_103_515_245 + 12_345) % 2_147_483_648) / 2_147_483_648;
const words = messages.flatMap((message) => message.text.split(/\s+/));
const word = () => words[Math.floor(random() * words.length)]!;
const dir = await mkdtemp(path.join(tmpdir(), 'cfs-campaigns-'));
const postgres = await startPostgres({ dir: path.join(dir, 'data'), persistent: false });
try {
  const orm = await createOrm(postgres.url, entities, 2);
  await migrate(orm);
  const em = orm.em.fork();
  const rows: string[] = [];
  let stored = 0;
  for (let n = 0; stored < VOTES; n += 1) {
    const text = n % 2 ? `${messages[n % messages.length]!.text} ${word()}` : Array.from({ length: 30 }, word).join(' ');
    const fingerprint = campaignFingerprint(text);
    if (!fingerprint) continue;
    rows.push(
      `(gen_random_uuid(), 'owner@shop${n % MAILBOXES}.example', 'shop${n % MAILBOXES}.example', 'spam', '{${fingerprint.hashes.join(',')}}', '{${fingerprint.bands.join(',')}}', now() - random() * interval '30 days')`,
    );
    stored += 1;
    if (rows.length === 5_000 || stored === VOTES)
      await em.execute(`insert into spam_campaign_votes (submission_id, mailbox, domain, mark, hashes, bands, marked_at) values ${rows.splice(0).join(',')}`);
  }
  await em.execute('vacuum analyze spam_campaign_votes');
  const checked = entries.map((entry) => entry.fingerprint);
  const started = performance.now();
  for (let n = 0; n < TIMED_CHECKS; n += 1) await campaignVotes(em, 'checker@example.test', checked[n % checked.length]!);
  const perCheck = (performance.now() - started) / TIMED_CHECKS;
  const [size] = await em.execute<Array<{ table: string; bands: string }>>(
    `select pg_size_pretty(pg_total_relation_size('spam_campaign_votes')) as table, pg_size_pretty(pg_relation_size('spam_campaign_votes_bands_idx')) as bands`,
  );
  process.stdout.write(
    `${VOTES} votes of ${MAILBOXES} mailboxes: ${size!.table} with indexes (bands' index ${size!.bands}); one check ${perCheck.toFixed(2)} ms, round trip included (${TIMED_CHECKS} checks of the corpus's messages)\n`,
  );
  await orm.close();
} finally {
  await postgres.stop();
  await rm(dir, { recursive: true, force: true });
}
