import { Migration } from '@mikro-orm/migrations';

/** The owners' marks not taught to the spam filter yet (past the key's hourly allowance, or while it was down), oldest first per key. */
export class Migration20261126000000_untaught_marks extends Migration {
  override name = 'Migration20261126000000_untaught_marks';

  override up(): void | Promise<void> {
    this.addSql(
      `create index "submissions_untaught_marks_idx" on "submissions" ("key_id", "spam_marked_at") where "spam_mark" is not null and "spam_taught_at" is null;`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index if exists "submissions_untaught_marks_idx";`);
  }
}
