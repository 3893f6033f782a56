import { Migration } from '@mikro-orm/migrations';

/**
 * A mark's place in the allowance is reserved (spam_taught_at set) before the filter is asked to
 * learn it: spam_teach_pending says the filter has not answered yet, so that a reservation left
 * behind by a process that died meanwhile is found and the mark taught again.
 */
export class Migration20261126010000_pending_teaching extends Migration {
  override name = 'Migration20261126010000_pending_teaching';

  override up(): void | Promise<void> {
    this.addSql(`alter table "submissions" add column "spam_teach_pending" boolean not null default false;`);
    this.addSql(`create index "submissions_teach_pending_idx" on "submissions" ("spam_taught_at") where "spam_teach_pending";`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index if exists "submissions_teach_pending_idx";`);
    this.addSql(`alter table "submissions" drop column "spam_teach_pending";`);
  }
}
