import { Migration } from '@mikro-orm/migrations';

// The virus scan of each stored file (docs/file-scanning.md): its outcome, the signature or the
// reason, when, and when a quarantined file's object is deleted. Nullable columns without a default:
// adding them rewrites nothing, and the API's inserts stay as they were.
export class Migration20261207230000_file_scans extends Migration {
  override name = 'Migration20261207230000_file_scans';

  override up(): void | Promise<void> {
    this.addSql(`alter table "attachments" add "scan_outcome" text null, add "scan_detail" varchar(500) null,
      add "scanned_at" timestamptz null, add "purge_at" timestamptz null;`);
    this.addSql(
      `alter table "attachments" add constraint "attachments_scan_outcome_check" check ("scan_outcome" in ('clean', 'infected', 'unscanned', 'too_large_to_scan'));`,
    );
    this.addSql(`create index "attachments_purge_at_idx" on "attachments" ("purge_at") where "purge_at" is not null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index if exists "attachments_purge_at_idx";`);
    this.addSql(`alter table "attachments" drop column "scan_outcome", drop column "scan_detail", drop column "scanned_at", drop column "purge_at";`);
  }
}
