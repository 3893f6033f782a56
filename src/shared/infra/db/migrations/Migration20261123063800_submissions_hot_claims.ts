import { Migration } from '@mikro-orm/migrations';

/**
 * A claim (queued → sending) could not be a HOT update while an index named email_status: every
 * claim wrote a new entry into each of the table's indexes (docs/benchmarks.md#scenarios-and-targets). The status
 * index is replaced by two partial indexes on created_at, split by `settled`, a column PostgreSQL
 * derives from email_status that a claim does not change, and the table keeps room on its pages
 * for the new row versions of claims (fillfactor). The reconciler and the held-submission rules
 * read the open rows, retention the settled ones (src/shared/deliveries/data/delivery-rows.ts, src/workers/housekeeping/retention.ts).
 */
export class Migration20261123063800_submissions_hot_claims extends Migration {
  override name = 'Migration20261123063800_submissions_hot_claims';

  override up(): void | Promise<void> {
    this.addSql(`alter table "submissions" add column "settled" boolean generated always as ("email_status" in ('sent', 'failed', 'skipped')) stored;`);
    this.addSql(`create index "submissions_open_created_idx" on "submissions" ("created_at", "id") where not "settled";`);
    this.addSql(`create index "submissions_settled_created_idx" on "submissions" ("created_at") where "settled";`);
    this.addSql(`drop index "submissions_email_status_created_idx";`);
    this.addSql(`alter table "submissions" set (fillfactor = 80);`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "submissions" reset (fillfactor);`);
    this.addSql(`create index "submissions_email_status_created_idx" on "submissions" ("email_status", "created_at");`);
    this.addSql(`drop index "submissions_settled_created_idx";`);
    this.addSql(`drop index "submissions_open_created_idx";`);
    this.addSql(`alter table "submissions" drop column "settled";`);
  }
}
