import { Migration } from '@mikro-orm/migrations';

// The autoresponse (the confirmation email to a visitor): the key's settings, what became of it on
// each submission, and the table of autoresponses, which is also what the 24-hour bounds count.
export class Migration20261128011808_autoresponse extends Migration {
  override name = 'Migration20261128011808_autoresponse';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "autoresponses" ("id" uuid not null, "submission_id" uuid null, "key_id" uuid not null, "email" varchar(254) not null, "mailbox" varchar(254) not null, "email_status" text not null default 'queued', "email_attempts" int not null default 0, "last_error" text null, "claimed_at" timestamptz null, "sent_at" timestamptz null, "message_id" varchar(998) null, "requeued_at" timestamptz null, "bounce_type" text null, "bounce_status" varchar(16) null, "bounce_diagnostic" text null, "bounce_mta" varchar(255) null, "bounced_at" timestamptz null, "created_at" timestamptz not null default now(), primary key ("id"));`,
    );
    this.addSql(`create index "autoresponses_submission_id_index" on "autoresponses" ("submission_id");`);
    this.addSql(`create index "autoresponses_mailbox_created_idx" on "autoresponses" ("mailbox", "created_at");`);
    this.addSql(`create index "autoresponses_email_status_created_idx" on "autoresponses" ("email_status", "created_at");`);

    this.addSql(
      `alter table "verification_keys" add "autoresponse_enabled" boolean not null default false, add "autoresponse_subject" varchar(150) null, add "autoresponse_text" text null;`,
    );

    this.addSql(`alter table "submissions" add "autoresponse" text null;`);
    this.addSql(
      `alter table "submissions" add constraint "submissions_autoresponse_check" check ("autoresponse" in ('pending', 'sent', 'failed', 'off', 'not_confirmed', 'spam', 'unchecked', 'filter_off', 'suppressed', 'role_address', 'limit_key', 'limit_address'));`,
    );

    this.addSql(
      `alter table "autoresponses" add constraint "autoresponses_submission_id_foreign" foreign key ("submission_id") references "submissions" ("id") on delete set null;`,
    );
    this.addSql(
      `alter table "autoresponses" add constraint "autoresponses_key_id_foreign" foreign key ("key_id") references "verification_keys" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "autoresponses" add constraint "autoresponses_email_status_check" check ("email_status" in ('queued', 'sending', 'retrying', 'sent', 'failed', 'skipped', 'held', 'bounced', 'complained', 'suppressed', 'spam'));`,
    );
    this.addSql(
      `alter table "autoresponses" add constraint "autoresponses_bounce_type_check" check ("bounce_type" in ('hard', 'soft', 'delayed', 'complaint'));`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "autoresponses" cascade;`);
    this.addSql(`alter table "submissions" drop constraint "submissions_autoresponse_check";`);
    this.addSql(`alter table "submissions" drop column "autoresponse";`);
    this.addSql(`alter table "verification_keys" drop column "autoresponse_enabled", drop column "autoresponse_subject", drop column "autoresponse_text";`);
  }
}
