import { Migration } from '@mikro-orm/migrations';

/**
 * The virus scan of each stored file (docs/file-scanning.md): its outcome, the signature or the
 * reason, when, and when a quarantined file's object is deleted. Nullable columns without a default:
 * adding them rewrites nothing, and the API's inserts stay as they were.
 *
 * Not in a transaction, so that no step holds `attachments` locked while it reads the table (the
 * intake of files goes on, docs/upgrading.md): the check is added NOT VALID, then validated, and the
 * index is built CONCURRENTLY (an index left invalid by a build that failed is built again).
 */
export class Migration20261207230000_file_scans extends Migration {
  override name = 'Migration20261207230000_file_scans';

  override isTransactional(): boolean {
    return false;
  }

  override async up(): Promise<void> {
    await this.execute(`alter table "attachments" add column if not exists "scan_outcome" text null, add column if not exists "scan_detail" varchar(500) null,
      add column if not exists "scanned_at" timestamptz null, add column if not exists "purge_at" timestamptz null;`);
    await this.execute(`alter table "attachments" drop constraint if exists "attachments_scan_outcome_check";`);
    await this.execute(
      `alter table "attachments" add constraint "attachments_scan_outcome_check" check ("scan_outcome" in ('clean', 'infected', 'unscanned', 'too_large_to_scan')) not valid;`,
    );
    await this.execute(`alter table "attachments" validate constraint "attachments_scan_outcome_check";`);
    await this.execute(`drop index concurrently if exists "attachments_purge_at_idx";`);
    await this.execute(`create index concurrently "attachments_purge_at_idx" on "attachments" ("purge_at") where "purge_at" is not null;`);
  }

  override async down(): Promise<void> {
    await this.execute(`drop index concurrently if exists "attachments_purge_at_idx";`);
    await this.execute(`alter table "attachments" drop column "scan_outcome", drop column "scan_detail", drop column "scanned_at", drop column "purge_at";`);
  }
}
