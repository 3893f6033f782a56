import { Migration } from '@mikro-orm/migrations';

const STATUSES_BEFORE = `'queued', 'sending', 'retrying', 'sent', 'failed', 'skipped', 'held'`;
const STATUSES = `${STATUSES_BEFORE}, 'bounced', 'complained', 'suppressed'`;
const BOUNCE_COLUMNS = `add "bounce_type" text null, add "bounce_status" varchar(16) null, add "bounce_diagnostic" text null,
  add "bounce_mta" varchar(255) null, add "bounced_at" timestamptz null`;

/**
 * Delivery past the relay: what came back for an email (a bounce, a delay, a complaint) on its row,
 * the statuses `bounced`, `complained` and `suppressed`, each mailbox's hard bounces, and
 * the event a webhook delivery carries.
 * `submissions.settled` lists the settled statuses, so it is dropped and added again: PostgreSQL
 * rewrites the table (and its two partial indexes) under an exclusive lock, about a second per
 * million rows. The other columns are nullable or have a constant default: no rewrite.
 */
export class Migration20261125020052_bounces extends Migration {
  override name = 'Migration20261125020052_bounces';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "mailbox_bounces" ("mailbox" varchar(254) not null, "hard_bounces" int not null default 0, "last_bounced_at" timestamptz null, "suppressed_until" timestamptz null, primary key ("mailbox"));`,
    );

    this.addSql(`alter table "submissions" drop constraint "submissions_email_status_check";`);
    this.addSql(`alter table "submissions" drop column "settled";`); // drops its two partial indexes
    this.addSql(`alter table "submissions" ${BOUNCE_COLUMNS},
      add "settled" boolean generated always as (email_status in ('sent', 'failed', 'skipped', 'bounced', 'complained', 'suppressed')) stored null;`);
    this.addSql(`create index "submissions_open_created_idx" on "submissions" ("created_at", "id") where not "settled";`);
    this.addSql(`create index "submissions_settled_created_idx" on "submissions" ("created_at") where "settled";`);
    this.addSql(`alter table "submissions" add constraint "submissions_bounce_type_check" check ("bounce_type" in ('hard', 'soft', 'delayed', 'complaint'));`);
    this.addSql(`alter table "submissions" add constraint "submissions_email_status_check" check ("email_status" in (${STATUSES}));`);

    this.addSql(`alter table "key_emails" drop constraint "key_emails_email_status_check";`);
    this.addSql(`alter table "key_emails" ${BOUNCE_COLUMNS};`);
    this.addSql(`alter table "key_emails" add constraint "key_emails_bounce_type_check" check ("bounce_type" in ('hard', 'soft', 'delayed', 'complaint'));`);
    this.addSql(`alter table "key_emails" add constraint "key_emails_email_status_check" check ("email_status" in (${STATUSES}));`);

    this.addSql(`alter table "webhook_deliveries" drop constraint "webhook_deliveries_email_status_check";`);
    this.addSql(`alter table "webhook_deliveries" add "event" text not null default 'submission.created';`);
    this.addSql(
      `alter table "webhook_deliveries" add constraint "webhook_deliveries_event_check" check ("event" in ('submission.created', 'submission.bounced'));`,
    );
    this.addSql(`alter table "webhook_deliveries" add constraint "webhook_deliveries_email_status_check" check ("email_status" in (${STATUSES}));`);
  }

  /** Rows in a new status go back to what they were before the relay's report: `sent` (`queued` when suppressed). */
  override down(): void | Promise<void> {
    this.addSql(`delete from "webhook_deliveries" where "event" <> 'submission.created';`);
    this.addSql(
      `alter table "webhook_deliveries" drop constraint "webhook_deliveries_event_check", drop constraint "webhook_deliveries_email_status_check", drop column "event";`,
    );
    this.addSql(`alter table "webhook_deliveries" add constraint "webhook_deliveries_email_status_check" check ("email_status" in (${STATUSES_BEFORE}));`);

    for (const table of ['key_emails', 'submissions']) {
      this.addSql(`alter table "${table}" drop constraint "${table}_email_status_check", drop constraint "${table}_bounce_type_check";`);
      this.addSql(`update "${table}" set "email_status" = case when "email_status" = 'suppressed' then 'queued' else 'sent' end
        where "email_status" in ('bounced', 'complained', 'suppressed');`);
    }
    this.addSql(
      `alter table "key_emails" drop column "bounce_type", drop column "bounce_status", drop column "bounce_diagnostic", drop column "bounce_mta", drop column "bounced_at";`,
    );
    this.addSql(`alter table "key_emails" add constraint "key_emails_email_status_check" check ("email_status" in (${STATUSES_BEFORE}));`);

    this.addSql(
      `alter table "submissions" drop column "settled", drop column "bounce_type", drop column "bounce_status", drop column "bounce_diagnostic", drop column "bounce_mta", drop column "bounced_at";`,
    );
    this.addSql(`alter table "submissions" add "settled" boolean generated always as ("email_status" in ('sent', 'failed', 'skipped')) stored;`);
    this.addSql(`create index "submissions_open_created_idx" on "submissions" ("created_at", "id") where not "settled";`);
    this.addSql(`create index "submissions_settled_created_idx" on "submissions" ("created_at") where "settled";`);
    this.addSql(`alter table "submissions" add constraint "submissions_email_status_check" check ("email_status" in (${STATUSES_BEFORE}));`);

    this.addSql(`drop table "mailbox_bounces";`);
  }
}
