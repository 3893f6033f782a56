import { Migration } from '@mikro-orm/migrations';

/**
 * A complaint (an abuse report from the owner's mail provider) suppresses the mailbox until its
 * owner signs in to the console, as the row of its hard bounces is cleared then.
 */
export class Migration20261126100000_complaints extends Migration {
  override name = 'Migration20261126100000_complaints';

  override up(): void | Promise<void> {
    this.addSql(`alter table "mailbox_bounces" add column "complained_at" timestamptz null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "mailbox_bounces" drop column "complained_at";`);
  }
}
