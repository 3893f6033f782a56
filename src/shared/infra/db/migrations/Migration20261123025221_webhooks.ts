import { Migration } from '@mikro-orm/migrations';

export class Migration20261123025221_webhooks extends Migration {
  override name = 'Migration20261123025221_webhooks';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "webhook_endpoints" ("id" uuid not null, "key_id" uuid not null, "url" varchar(2048) not null, "secret_sealed" text not null, "enabled" boolean not null default true, "consecutive_failures" int not null default 0, "disabled_at" timestamptz null, "created_at" timestamptz not null default now(), primary key ("id"));`,
    );
    this.addSql(`create index "webhook_endpoints_key_id_index" on "webhook_endpoints" ("key_id");`);

    this.addSql(
      `create table "webhook_deliveries" ("id" uuid not null, "endpoint_id" uuid not null, "submission_id" uuid not null, "email_status" text not null default 'queued', "email_attempts" int not null default 0, "last_error" text null, "claimed_at" timestamptz null, "sent_at" timestamptz null, "message_id" varchar(998) null, "last_response_code" int null, "created_at" timestamptz not null default now(), primary key ("id"));`,
    );
    this.addSql(`create index "webhook_deliveries_endpoint_id_index" on "webhook_deliveries" ("endpoint_id");`);
    this.addSql(`create index "webhook_deliveries_submission_id_index" on "webhook_deliveries" ("submission_id");`);
    this.addSql(`create index "webhook_deliveries_status_created_idx" on "webhook_deliveries" ("email_status", "created_at");`);

    this.addSql(`alter table "key_emails" drop constraint "key_emails_kind_check";`);
    this.addSql(
      `alter table "key_emails" add constraint "key_emails_kind_check" check ("kind" in ('new-key', 'all-keys', 'confirm', 'sign-in', 'webhook-disabled'));`,
    );

    this.addSql(
      `alter table "webhook_endpoints" add constraint "webhook_endpoints_key_id_foreign" foreign key ("key_id") references "verification_keys" ("id") on delete cascade;`,
    );

    this.addSql(
      `alter table "webhook_deliveries" add constraint "webhook_deliveries_endpoint_id_foreign" foreign key ("endpoint_id") references "webhook_endpoints" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "webhook_deliveries" add constraint "webhook_deliveries_submission_id_foreign" foreign key ("submission_id") references "submissions" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "webhook_deliveries" add constraint "webhook_deliveries_email_status_check" check ("email_status" in ('queued', 'sending', 'retrying', 'sent', 'failed', 'skipped', 'held'));`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "webhook_deliveries" drop constraint "webhook_deliveries_endpoint_id_foreign";`);

    this.addSql(`drop table if exists "webhook_endpoints" cascade;`);
    this.addSql(`drop table if exists "webhook_deliveries" cascade;`);

    this.addSql(`alter table "key_emails" drop constraint "key_emails_kind_check";`);
    this.addSql(`alter table "key_emails" add constraint "key_emails_kind_check" check ("kind" in ('new-key', 'all-keys', 'confirm', 'sign-in'));`);
  }
}
