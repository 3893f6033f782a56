import { Migration } from '@mikro-orm/migrations';

export class Migration20261121054101_initial extends Migration {
  override name = 'Migration20261121054101_initial';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "verification_keys" ("id" uuid not null, "key" varchar(64) not null, "email" varchar(254) not null, "status" text not null default 'active', "use_domain" boolean not null default false, "domains" jsonb not null default '[]', "created_at" timestamptz not null default now(), "updated_at" timestamptz not null default now(), primary key ("id"));`,
    );
    this.addSql(`alter table "verification_keys" add constraint "verification_keys_key_unique" unique ("key");`);
    this.addSql(`create index "verification_keys_email_status_idx" on "verification_keys" ("email", "status");`);
    this.addSql(`alter table "verification_keys" add constraint "verification_keys_status_check" check ("status" in ('active', 'disabled', 'deleted'));`);

    this.addSql(
      `create table "submissions" ("id" uuid not null, "key_id" uuid not null, "email" varchar(254) not null, "message" text not null, "subject" varchar(998) not null, "custom_fields" jsonb not null default '[]', "email_status" text not null default 'queued', "email_attempts" int not null default 0, "last_error" text null, "claimed_at" timestamptz null, "sent_at" timestamptz null, "message_id" varchar(998) null, "client_ip" varchar(64) null, "origin" varchar(2048) null, "created_at" timestamptz not null default now(), primary key ("id"));`,
    );
    this.addSql(`create index "submissions_email_status_created_idx" on "submissions" ("email_status", "created_at");`);
    this.addSql(`create index "submissions_key_created_idx" on "submissions" ("key_id", "created_at");`);
    this.addSql(
      `alter table "submissions" add constraint "submissions_email_status_check" check ("email_status" in ('queued', 'sending', 'retrying', 'sent', 'failed', 'skipped'));`,
    );

    this.addSql(
      `create table "attachments" ("id" uuid not null, "submission_id" uuid not null, "field_name" varchar(200) not null, "filename" varchar(255) not null, "content_type" varchar(255) not null, "size" bigint not null, "storage_key" varchar(1024) not null, "sha256" varchar(64) not null, "created_at" timestamptz not null default now(), primary key ("id"));`,
    );
    this.addSql(`create index "attachments_submission_id_index" on "attachments" ("submission_id");`);

    this.addSql(
      `alter table "submissions" add constraint "submissions_key_id_foreign" foreign key ("key_id") references "verification_keys" ("id") on delete restrict;`,
    );

    this.addSql(
      `alter table "attachments" add constraint "attachments_submission_id_foreign" foreign key ("submission_id") references "submissions" ("id") on delete cascade;`,
    );
  }
}
