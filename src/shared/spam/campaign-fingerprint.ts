// The fingerprint of a message for spam campaigns (./spam-campaigns.ts): one spam text sent to many
// forms, with a name, a phone number or a link changed here and there. The message is normalised
// (lower case, every number a 0, a link its host, no punctuation), cut into overlapping runs of
// SHINGLE_WORDS words, and summarised by MinHash: HASHES values, the smallest hash of any run under
// each of HASHES hash functions. Two messages agree on a value about as often as the share of runs
// they have in common (their Jaccard similarity), so "most values agree" means "mostly the same
// text". The values are grouped in BANDS of ROWS_PER_BAND: two near-identical messages almost surely
// agree on a whole band, two unrelated ones almost never, so an index over the bands finds the few
// stored fingerprints worth comparing.
// The values are stored for CAMPAIGN_VOTE_DAYS: changing anything here makes new fingerprints
// incomparable with the stored ones, which then count for nothing until they expire.

/** Words per run: two keeps a changed word from spoiling more than two runs of a short message. */
const SHINGLE_WORDS = 2;
/** Values per fingerprint. */
export const HASHES = 48;
const ROWS_PER_BAND = 3;
const BANDS = HASHES / ROWS_PER_BAND;
/**
 * Fewer words than this: no fingerprint. Short messages ("Hi, I would like a quote for my kitchen")
 * are alike for customers and spammers: in two-word runs, a customer's rewording of one keeps most
 * runs of another's. Twenty words is a spam pitch's length, past what customers write alike; the
 * filter's other rules judge shorter messages.
 */
export const MIN_WORDS = 20;

export type Fingerprint = {
  /** HASHES signed 32-bit MinHash values, by position. */
  hashes: number[];
  /** One value per band, the band's number in its top bits: equal only for the same band of two messages. */
  bands: number[];
};

/** A link: its host only, as one word (a campaign changes the path, the tracking code, the scheme). */
const LINK = /\b(?:https?:\/\/|www\.)(?:[^\s/?#@]*@)?(?:www\.)?([^\s/?#:]+)\S*/giu;
/** A number standing alone, with the spaces, dots, dashes and brackets of a phone number: one 0 whatever its length. */
const NUMBER = /(?<![\p{L}\p{N}])\+?\d(?:[\d\s().-]*\d)?(?![\p{L}\p{N}])/gu;

/** The words the fingerprint is made of. */
export function campaignWords(message: string): string[] {
  return (
    message
      .normalize('NFKC')
      .toLowerCase()
      .replace(LINK, (_link, host: string) => ` ${host.replace(/[^\p{L}\p{N}]+/gu, '')} `)
      .replace(NUMBER, ' 0 ')
      // Digits within a word too ("2day", a code): as zeros, like the filter reads longer numbers.
      .replace(/\d/gu, '0')
      .split(/[^\p{L}\p{N}]+/u)
      .filter(Boolean)
  );
}

/** The message's fingerprint; undefined when it has fewer than MIN_WORDS words. */
export function campaignFingerprint(message: string): Fingerprint | undefined {
  const words = campaignWords(message);
  if (words.length < MIN_WORDS) return undefined;
  const hashes = new Array<number>(HASHES).fill(0xffffffff);
  for (let start = 0; start + SHINGLE_WORDS <= words.length; start += 1) {
    const shingle = fnv1a(words.slice(start, start + SHINGLE_WORDS).join(' '));
    for (let index = 0; index < HASHES; index += 1) {
      const value = fmix32((shingle ^ SEEDS[index]!) >>> 0);
      if (value < hashes[index]!) hashes[index] = value;
    }
  }
  const bands = Array.from({ length: BANDS }, (_, band) => {
    let value = 0x811c9dc5;
    for (let row = 0; row < ROWS_PER_BAND; row += 1) value = fmix32((value ^ hashes[band * ROWS_PER_BAND + row]!) >>> 0);
    // The band's number in the top 4 bits (BANDS ≤ 16): band 1 of one message never meets band 2 of another.
    return (band << 28) | (value >>> 4);
  });
  return { hashes: hashes.map((value) => value | 0), bands };
}

/** How many positions two fingerprints agree on. */
export function agreement(a: Fingerprint, b: Fingerprint): number {
  return a.hashes.reduce((count, value, index) => count + (value === b.hashes[index] ? 1 : 0), 0);
}

/** Whether two fingerprints are of near-identical messages: most values agree (the stored check says the same in SQL). */
export const MATCHING = Math.floor(HASHES / 2) + 1;

/** What the stored check finds near-identical: a band in common (its index), and MATCHING values equal. */
export function nearIdentical(a: Fingerprint, b: Fingerprint): boolean {
  return a.bands.some((band, index) => band === b.bands[index]) && agreement(a, b) >= MATCHING;
}

/** 32-bit FNV-1a of a string's UTF-16 code units. */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < text.length; index += 1) hash = Math.imul(hash ^ text.charCodeAt(index), 0x01000193);
  return hash >>> 0;
}

/** MurmurHash3's finaliser: a bijection of 32-bit values that mixes every bit into every other. */
function fmix32(value: number): number {
  let h = value;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/** One seed per hash function: each turns the runs' hashes into a different order. */
const SEEDS = Array.from({ length: HASHES }, (_, index) => fmix32((Math.imul(index + 1, 0x9e3779b9) >>> 0) ^ 0x5bd1e995));
