import { Migration } from '@mikro-orm/migrations';

const STATUSES_BEFORE = `'queued', 'sending', 'retrying', 'sent', 'failed', 'skipped', 'held', 'bounced', 'complained', 'suppressed'`;
const STATUSES = `${STATUSES_BEFORE}, 'spam'`;
const SETTLED_BEFORE = `'sent', 'failed', 'skipped', 'bounced', 'complained', 'suppressed'`;

/**
 * The spam filter: each key's level and whether spam goes to its webhooks, each submission's
 * verdict (score, reasons) and its owner's mark, and the status `spam`.
 * `submissions.settled` lists the settled statuses, so it is dropped and added again: PostgreSQL
 * rewrites the table (and its two partial indexes) under an exclusive lock, about a second per
 * million rows. The other columns are nullable or have a constant default: no rewrite.
 */
export class Migration20261125040000_spam extends Migration {
  override name = 'Migration20261125040000_spam';

  override up(): void | Promise<void> {
    this.addSql(`alter table "verification_keys" add "spam_filter" text not null default 'normal', add "spam_to_webhooks" boolean not null default false;`);
    this.addSql(`alter table "verification_keys" add constraint "verification_keys_spam_filter_check" check ("spam_filter" in ('off', 'normal', 'strict'));`);

    this.addSql(`alter table "submissions" drop constraint "submissions_email_status_check";`);
    this.addSql(`alter table "submissions" drop column "settled";`); // drops its two partial indexes
    this.addSql(`alter table "submissions" add "spam_verdict" text null, add "spam_score" real null, add "spam_reasons" jsonb null,
      add "spam_checked_at" timestamptz null, add "spam_mark" text null, add "spam_marked_at" timestamptz null, add "spam_taught_at" timestamptz null,
      add "settled" boolean generated always as (email_status in (${SETTLED_BEFORE}, 'spam')) stored null;`);
    this.addSql(`create index "submissions_open_created_idx" on "submissions" ("created_at", "id") where not "settled";`);
    this.addSql(`create index "submissions_settled_created_idx" on "submissions" ("created_at") where "settled";`);
    this.addSql(`create index "submissions_key_taught_idx" on "submissions" ("key_id", "spam_taught_at") where "spam_taught_at" is not null;`);
    this.addSql(`alter table "submissions" add constraint "submissions_spam_verdict_check" check ("spam_verdict" in ('ham', 'spam', 'unchecked'));`);
    this.addSql(`alter table "submissions" add constraint "submissions_spam_mark_check" check ("spam_mark" in ('ham', 'spam'));`);
    this.addSql(`alter table "submissions" add constraint "submissions_email_status_check" check ("email_status" in (${STATUSES}));`);

    for (const table of ['key_emails', 'webhook_deliveries']) {
      this.addSql(`alter table "${table}" drop constraint "${table}_email_status_check";`);
      this.addSql(`alter table "${table}" add constraint "${table}_email_status_check" check ("email_status" in (${STATUSES}));`);
    }
  }

  /** Submissions held as spam go back to `queued`, to be delivered (nothing is lost by going back). */
  override down(): void | Promise<void> {
    for (const table of ['key_emails', 'webhook_deliveries']) {
      this.addSql(`alter table "${table}" drop constraint "${table}_email_status_check";`);
      this.addSql(`alter table "${table}" add constraint "${table}_email_status_check" check ("email_status" in (${STATUSES_BEFORE}));`);
    }
    this.addSql(
      `alter table "submissions" drop constraint "submissions_email_status_check", drop constraint "submissions_spam_verdict_check", drop constraint "submissions_spam_mark_check";`,
    );
    this.addSql(`update "submissions" set "email_status" = 'queued' where "email_status" = 'spam';`);
    this.addSql(`alter table "submissions" drop column "settled", drop column "spam_verdict", drop column "spam_score", drop column "spam_reasons",
      drop column "spam_checked_at", drop column "spam_mark", drop column "spam_marked_at", drop column "spam_taught_at";`);
    this.addSql(`alter table "submissions" add "settled" boolean generated always as ("email_status" in (${SETTLED_BEFORE})) stored;`);
    this.addSql(`create index "submissions_open_created_idx" on "submissions" ("created_at", "id") where not "settled";`);
    this.addSql(`create index "submissions_settled_created_idx" on "submissions" ("created_at") where "settled";`);
    this.addSql(`alter table "submissions" add constraint "submissions_email_status_check" check ("email_status" in (${STATUSES_BEFORE}));`);

    this.addSql(
      `alter table "verification_keys" drop constraint "verification_keys_spam_filter_check", drop column "spam_filter", drop column "spam_to_webhooks";`,
    );
  }
}
