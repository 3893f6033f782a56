import { Migration } from '@mikro-orm/migrations';

export class Migration20261121055329_key_emails extends Migration {
  override name = 'Migration20261121055329_key_emails';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "key_emails" ("id" uuid not null, "kind" text not null, "email" varchar(254) not null, "key_id" uuid null, "email_status" text not null default 'queued', "email_attempts" int not null default 0, "last_error" text null, "claimed_at" timestamptz null, "sent_at" timestamptz null, "message_id" varchar(998) null, "created_at" timestamptz not null default now(), primary key ("id"));`,
    );
    this.addSql(`create index "key_emails_email_status_created_idx" on "key_emails" ("email_status", "created_at");`);

    this.addSql(
      `alter table "key_emails" add constraint "key_emails_key_id_foreign" foreign key ("key_id") references "verification_keys" ("id") on delete cascade;`,
    );
    this.addSql(`alter table "key_emails" add constraint "key_emails_kind_check" check ("kind" in ('new-key', 'all-keys'));`);
    this.addSql(
      `alter table "key_emails" add constraint "key_emails_email_status_check" check ("email_status" in ('queued', 'sending', 'retrying', 'sent', 'failed', 'skipped'));`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "key_emails" cascade;`);
  }
}
