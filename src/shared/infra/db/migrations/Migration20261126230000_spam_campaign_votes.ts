import { Migration } from '@mikro-orm/migrations';

/** How far back the marks made before this migration vote: CAMPAIGN_VOTE_DAYS as it was then. */
const VOTE_DAYS = 30;

// A frozen copy of src/shared/spam/campaign-fingerprint.ts as it was when this migration was
// written (8 words at least, pairs of words, 48 MinHash values in 16 bands of 3): a migration must
// do the same thing on every installation, whatever the service's rules become later. A later
// migration drops the votes that later rules no longer count.
const HASHES = 48;
const ROWS_PER_BAND = 3;
const MIN_WORDS = 8;
const LINK = /\b(?:https?:\/\/|www\.)(?:[^\s/?#@]*@)?(?:www\.)?([^\s/?#:]+)\S*/giu;
const NUMBER = /(?<![\p{L}\p{N}])\+?\d(?:[\d\s().-]*\d)?(?![\p{L}\p{N}])/gu;

function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < text.length; index += 1) hash = Math.imul(hash ^ text.charCodeAt(index), 0x01000193);
  return hash >>> 0;
}

function fmix32(value: number): number {
  let h = value;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

const SEEDS = Array.from({ length: HASHES }, (_, index) => fmix32((Math.imul(index + 1, 0x9e3779b9) >>> 0) ^ 0x5bd1e995));

function campaignFingerprint(message: string): { hashes: number[]; bands: number[] } | undefined {
  const words = message
    .normalize('NFKC')
    .toLowerCase()
    .replace(LINK, (_link, host: string) => ` ${host.replace(/[^\p{L}\p{N}]+/gu, '')} `)
    .replace(NUMBER, ' 0 ')
    .replace(/\d/gu, '0')
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean);
  if (words.length < MIN_WORDS) return undefined;
  const hashes = new Array<number>(HASHES).fill(0xffffffff);
  for (let start = 0; start + 2 <= words.length; start += 1) {
    const shingle = fnv1a(words.slice(start, start + 2).join(' '));
    for (let index = 0; index < HASHES; index += 1) {
      const value = fmix32((shingle ^ SEEDS[index]!) >>> 0);
      if (value < hashes[index]!) hashes[index] = value;
    }
  }
  const bands = Array.from({ length: HASHES / ROWS_PER_BAND }, (_, band) => {
    let value = 0x811c9dc5;
    for (let row = 0; row < ROWS_PER_BAND; row += 1) value = fmix32((value ^ hashes[band * ROWS_PER_BAND + row]!) >>> 0);
    return (band << 28) | (value >>> 4);
  });
  return { hashes: hashes.map((value) => value | 0), bands };
}

/**
 * The owners' marks as votes on spam campaigns: each marked message's fingerprint and its owner's
 * mailbox (src/shared/spam/spam-campaigns.ts). The bands' GIN index finds near-identical messages in one
 * query; marked_at's index serves retention. The marks of the last 30 days vote at once: their
 * fingerprints are computed here, as the service computes them.
 */
export class Migration20261126230000_spam_campaign_votes extends Migration {
  override name = 'Migration20261126230000_spam_campaign_votes';

  override async up(): Promise<void> {
    // Run at once rather than queued with addSql: the votes are inserted after, in the same transaction.
    await this.execute(
      `create table "spam_campaign_votes" ("submission_id" uuid not null, "mailbox" varchar(254) not null, "mark" text not null, "hashes" int4[] not null, "bands" int4[] not null, "marked_at" timestamptz not null default now(), primary key ("submission_id"));`,
    );
    // Without GIN's pending list: a vote is written at an owner's click, a check runs for every
    // email, and each check would otherwise read the whole list (up to 4 MB) until it is merged.
    await this.execute(`create index "spam_campaign_votes_bands_idx" on "spam_campaign_votes" using gin ("bands") with (fastupdate = off);`);
    await this.execute(`create index "spam_campaign_votes_marked_idx" on "spam_campaign_votes" ("marked_at");`);
    await this.execute(`alter table "spam_campaign_votes" add constraint "spam_campaign_votes_mark_check" check ("mark" in ('ham', 'spam'));`);
    const marked = (await this.execute(
      `select s."id", k."mailbox", s."spam_mark" as "mark", s."message", s."spam_marked_at" as "marked_at"
         from "submissions" s join "verification_keys" k on k."id" = s."key_id"
        where s."spam_mark" is not null and s."spam_marked_at" > now() - make_interval(days => ?)`,
      [VOTE_DAYS],
    )) as Array<{ id: string; mailbox: string; mark: string; message: string; marked_at: Date }>;
    for (const row of marked) {
      const fingerprint = campaignFingerprint(row.message);
      if (!fingerprint) continue;
      await this.execute(
        `insert into "spam_campaign_votes" ("submission_id", "mailbox", "mark", "hashes", "bands", "marked_at") values (?, ?, ?, ?::int4[], ?::int4[], ?)`,
        [row.id, row.mailbox, row.mark, `{${fingerprint.hashes.join(',')}}`, `{${fingerprint.bands.join(',')}}`, row.marked_at],
      );
    }
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "spam_campaign_votes" cascade;`);
  }
}
