import { Migration } from '@mikro-orm/migrations';

/**
 * A key's teaching allowance counts each teaching in a table of its own instead of the marks'
 * `spam_taught_at`: a reversed or deleted mark no longer gives its place back. The marks taught in
 * the last hour are carried over, so the allowance in progress stays spent.
 */
export class Migration20261126220000_spam_teachings extends Migration {
  override name = 'Migration20261126220000_spam_teachings';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "spam_teachings" ("id" uuid not null, "key_id" uuid not null, "submission_id" uuid null, "mark" text not null, "taught_at" timestamptz not null default now(), primary key ("id"));`,
    );
    this.addSql(`create index "spam_teachings_submission_id_index" on "spam_teachings" ("submission_id");`);
    this.addSql(`create index "spam_teachings_key_taught_idx" on "spam_teachings" ("key_id", "taught_at");`);
    this.addSql(
      `alter table "spam_teachings" add constraint "spam_teachings_key_id_foreign" foreign key ("key_id") references "verification_keys" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "spam_teachings" add constraint "spam_teachings_submission_id_foreign" foreign key ("submission_id") references "submissions" ("id") on delete set null;`,
    );
    this.addSql(`alter table "spam_teachings" add constraint "spam_teachings_mark_check" check ("mark" in ('ham', 'spam'));`);
    this.addSql(`insert into "spam_teachings" ("id", "key_id", "submission_id", "mark", "taught_at")
      select gen_random_uuid(), "key_id", "id", "spam_mark", "spam_taught_at" from "submissions"
       where "spam_taught_at" > now() - interval '1 hour' and "spam_mark" is not null;`);
    this.addSql(`drop index "submissions_key_taught_idx";`);
  }

  override down(): void | Promise<void> {
    this.addSql(`create index "submissions_key_taught_idx" on "submissions" ("key_id", "spam_taught_at") where spam_taught_at is not null;`);
    this.addSql(`drop table if exists "spam_teachings" cascade;`);
  }
}
