import { Migration } from '@mikro-orm/migrations';

const MAILBOX_SQL = `regexp_replace(lower("email"), '^([^@+]*)\\+[^@]*@', '\\1@')`;

export class Migration20261123020805_recipient_consent extends Migration {
  override name = 'Migration20261123020805_recipient_consent';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "mailbox_allowances" ("mailbox" varchar(254) not null, "window_start" timestamptz not null, "used" int not null, primary key ("mailbox", "window_start"));`,
    );

    this.addSql(
      `create table "recipients" ("mailbox" varchar(254) not null, "confirmed_at" timestamptz null, "confirm_requested_at" timestamptz null, "created_at" timestamptz not null default now(), primary key ("mailbox"));`,
    );

    // Existing rows get their mailbox (lower-cased, +tag removed, as src/shared/keys/consent.ts computes it)
    // and the bytes already stored for them, before the column becomes required.
    this.addSql(`alter table "verification_keys" add "mailbox" varchar(254) null, add "stored_bytes" bigint not null default '0';`);
    this.addSql(`update "verification_keys" set "mailbox" = ${MAILBOX_SQL};`);
    this.addSql(
      `update "verification_keys" k set "stored_bytes" = s.bytes from (select sub.key_id, sum(a.size) as bytes from "attachments" a join "submissions" sub on sub.id = a.submission_id group by sub.key_id) s where s.key_id = k.id;`,
    );
    this.addSql(`alter table "verification_keys" alter column "mailbox" set not null;`);
    this.addSql(`create index "verification_keys_mailbox_idx" on "verification_keys" ("mailbox");`);

    this.addSql(`alter table "submissions" drop constraint "submissions_email_status_check";`);
    this.addSql(
      `alter table "submissions" add constraint "submissions_email_status_check" check ("email_status" in ('queued', 'sending', 'retrying', 'sent', 'failed', 'skipped', 'held'));`,
    );

    this.addSql(`alter table "key_emails" drop constraint "key_emails_email_status_check";`);
    this.addSql(`alter table "key_emails" drop constraint "key_emails_kind_check";`);
    this.addSql(`alter table "key_emails" add "mailbox" varchar(254) null;`);
    this.addSql(`update "key_emails" set "mailbox" = ${MAILBOX_SQL};`);
    this.addSql(`alter table "key_emails" alter column "mailbox" set not null;`);
    this.addSql(`create index "key_emails_mailbox_created_idx" on "key_emails" ("mailbox", "created_at");`);
    this.addSql(
      `alter table "key_emails" add constraint "key_emails_email_status_check" check ("email_status" in ('queued', 'sending', 'retrying', 'sent', 'failed', 'skipped', 'held'));`,
    );
    this.addSql(`alter table "key_emails" add constraint "key_emails_kind_check" check ("kind" in ('new-key', 'all-keys', 'confirm'));`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "mailbox_allowances" cascade;`);
    this.addSql(`drop table if exists "recipients" cascade;`);

    this.addSql(`drop index "key_emails_mailbox_created_idx";`);
    this.addSql(`alter table "key_emails" drop constraint "key_emails_kind_check";`);
    this.addSql(`alter table "key_emails" drop constraint "key_emails_email_status_check";`);
    this.addSql(`alter table "key_emails" drop column "mailbox";`);
    this.addSql(`alter table "key_emails" add constraint "key_emails_kind_check" check ("kind" in ('new-key', 'all-keys'));`);
    this.addSql(
      `alter table "key_emails" add constraint "key_emails_email_status_check" check ("email_status" in ('queued', 'sending', 'retrying', 'sent', 'failed', 'skipped'));`,
    );

    this.addSql(`alter table "submissions" drop constraint "submissions_email_status_check";`);
    this.addSql(
      `alter table "submissions" add constraint "submissions_email_status_check" check ("email_status" in ('queued', 'sending', 'retrying', 'sent', 'failed', 'skipped'));`,
    );

    this.addSql(`drop index "verification_keys_mailbox_idx";`);
    this.addSql(`alter table "verification_keys" drop column "mailbox", drop column "stored_bytes";`);
  }
}
