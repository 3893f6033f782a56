import { Migration } from '@mikro-orm/migrations';

export class Migration20261123022159_owner_console extends Migration {
  override name = 'Migration20261123022159_owner_console';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "owner_sessions" ("id" uuid not null, "token_hash" varchar(64) not null, "email" varchar(254) not null, "expires_at" timestamptz not null, "created_at" timestamptz not null default now(), primary key ("id"));`,
    );
    this.addSql(`alter table "owner_sessions" add constraint "owner_sessions_token_hash_unique" unique ("token_hash");`);
    this.addSql(`create index "owner_sessions_expires_at_index" on "owner_sessions" ("expires_at");`);

    this.addSql(
      `create table "owner_sign_ins" ("id" uuid not null, "email" varchar(254) not null, "token_hash" varchar(64) not null, "token_sealed" text not null, "expires_at" timestamptz not null, "created_at" timestamptz not null default now(), primary key ("id"));`,
    );
    this.addSql(`alter table "owner_sign_ins" add constraint "owner_sign_ins_token_hash_unique" unique ("token_hash");`);
    this.addSql(`create index "owner_sign_ins_expires_at_index" on "owner_sign_ins" ("expires_at");`);

    this.addSql(`alter table "key_emails" drop constraint "key_emails_kind_check";`);
    this.addSql(`alter table "key_emails" add constraint "key_emails_kind_check" check ("kind" in ('new-key', 'all-keys', 'confirm', 'sign-in'));`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "owner_sessions" cascade;`);
    this.addSql(`drop table if exists "owner_sign_ins" cascade;`);

    this.addSql(`alter table "key_emails" drop constraint "key_emails_kind_check";`);
    this.addSql(`alter table "key_emails" add constraint "key_emails_kind_check" check ("kind" in ('new-key', 'all-keys', 'confirm'));`);
  }
}
