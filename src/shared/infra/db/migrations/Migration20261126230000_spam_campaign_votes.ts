import { Migration } from '@mikro-orm/migrations';
import { campaignFingerprint } from '../../../spam/campaign-fingerprint.ts';

/** How far back the marks made before this migration vote: CAMPAIGN_VOTE_DAYS as it was then. */
const VOTE_DAYS = 30;

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
