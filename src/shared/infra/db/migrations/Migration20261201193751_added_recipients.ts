import { Migration } from '@mikro-orm/migrations';

// More recipients per key: the addresses an owner added to a key, each with its own consent, the
// copy of each submission's email to each of them (a delivery row of its own), and the key email
// that asks an added address to confirm.
export class Migration20261201193751_added_recipients extends Migration {
  override name = 'Migration20261201193751_added_recipients';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "key_recipients" ("id" uuid not null, "key_id" uuid not null, "email" varchar(254) not null, "mailbox" varchar(254) not null, "confirmed_at" timestamptz null, "created_at" timestamptz not null default now(), primary key ("id"));`,
    );
    this.addSql(`alter table "key_recipients" add constraint "key_recipients_key_mailbox_unique" unique ("key_id", "mailbox");`);

    this.addSql(
      `create table "recipient_copies" ("id" uuid not null, "submission_id" uuid not null, "key_id" uuid not null, "recipient_id" uuid null, "email" varchar(254) not null, "mailbox" varchar(254) not null, "email_status" text not null default 'queued', "email_attempts" int not null default 0, "last_error" text null, "claimed_at" timestamptz null, "sent_at" timestamptz null, "message_id" varchar(998) null, "requeued_at" timestamptz null, "bounce_type" text null, "bounce_status" varchar(16) null, "bounce_diagnostic" text null, "bounce_mta" varchar(255) null, "bounced_at" timestamptz null, "created_at" timestamptz not null default now(), primary key ("id"));`,
    );
    this.addSql(`create index "recipient_copies_recipient_id_index" on "recipient_copies" ("recipient_id");`);
    this.addSql(`create index "recipient_copies_email_status_created_idx" on "recipient_copies" ("email_status", "created_at");`);
    this.addSql(`alter table "recipient_copies" add constraint "recipient_copies_submission_mailbox_unique" unique ("submission_id", "mailbox");`);

    this.addSql(`alter table "key_emails" drop constraint "key_emails_kind_check";`);
    this.addSql(
      `alter table "key_emails" add constraint "key_emails_kind_check" check ("kind" in ('new-key', 'all-keys', 'confirm', 'sign-in', 'webhook-disabled', 'recipient-confirm'));`,
    );

    this.addSql(
      `alter table "key_recipients" add constraint "key_recipients_key_id_foreign" foreign key ("key_id") references "verification_keys" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "recipient_copies" add constraint "recipient_copies_submission_id_foreign" foreign key ("submission_id") references "submissions" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "recipient_copies" add constraint "recipient_copies_key_id_foreign" foreign key ("key_id") references "verification_keys" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "recipient_copies" add constraint "recipient_copies_recipient_id_foreign" foreign key ("recipient_id") references "key_recipients" ("id") on delete set null;`,
    );
    this.addSql(
      `alter table "recipient_copies" add constraint "recipient_copies_email_status_check" check ("email_status" in ('queued', 'sending', 'retrying', 'sent', 'failed', 'skipped', 'held', 'bounced', 'complained', 'suppressed', 'spam'));`,
    );
    this.addSql(
      `alter table "recipient_copies" add constraint "recipient_copies_bounce_type_check" check ("bounce_type" in ('hard', 'soft', 'delayed', 'complaint'));`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "recipient_copies" cascade;`);
    this.addSql(`drop table if exists "key_recipients" cascade;`);
    this.addSql(`delete from "key_emails" where "kind" = 'recipient-confirm';`);
    this.addSql(`alter table "key_emails" drop constraint "key_emails_kind_check";`);
    this.addSql(
      `alter table "key_emails" add constraint "key_emails_kind_check" check ("kind" in ('new-key', 'all-keys', 'confirm', 'sign-in', 'webhook-disabled'));`,
    );
  }
}
