import { Migration } from '@mikro-orm/migrations';

// Test messages: a submission the owner sent from the console, marked as such, and the index that
// counts a key's test messages of the last hour (their bound). A column with a constant default
// is added without rewriting the table.
export class Migration20261207164051_test_messages extends Migration {
  override name = 'Migration20261207164051_test_messages';

  override up(): void | Promise<void> {
    this.addSql(`alter table "submissions" add "test" boolean not null default false;`);
    this.addSql(`create index "submissions_key_test_idx" on "submissions" ("key_id", "created_at") where "test";`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index if exists "submissions_key_test_idx";`);
    this.addSql(`alter table "submissions" drop column if exists "test";`);
  }
}
