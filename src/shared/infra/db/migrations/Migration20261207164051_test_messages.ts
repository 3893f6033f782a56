import { Migration } from '@mikro-orm/migrations';

// Test messages: a submission the owner sent from the console, marked as such, and the index that
// counts a key's test messages of the last hour (their bound). A column with a constant default
// is added without rewriting the table; the index is built CONCURRENTLY (outside a transaction),
// so intake goes on while it reads the table. An index left invalid by a build that failed is
// built again.
export class Migration20261207164051_test_messages extends Migration {
  override name = 'Migration20261207164051_test_messages';

  override isTransactional(): boolean {
    return false;
  }

  override async up(): Promise<void> {
    await this.execute(`alter table "submissions" add column if not exists "test" boolean not null default false;`);
    await this.execute(`drop index concurrently if exists "submissions_key_test_idx";`);
    await this.execute(`create index concurrently "submissions_key_test_idx" on "submissions" ("key_id", "created_at") where "test";`);
  }

  override async down(): Promise<void> {
    await this.execute(`drop index concurrently if exists "submissions_key_test_idx";`);
    await this.execute(`alter table "submissions" drop column if exists "test";`);
  }
}
