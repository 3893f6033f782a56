import { Migration } from '@mikro-orm/migrations';

/**
 * A re-send of a failed delivery (the owner's, the admin API's, or its job retried on the queue
 * dashboard) starts a fresh delivery: its attempts count from 0 and its retry horizon from the
 * re-send, not from the row's creation. Without this, a row failed for good after the horizon met
 * its first temporary refusal (a greylisting 451, say) and was failed again at once.
 * A nullable column without a default: no table rewrite.
 */
export class Migration20261123170000_requeued_at extends Migration {
  override name = 'Migration20261123170000_requeued_at';

  override up(): void | Promise<void> {
    for (const table of ['submissions', 'key_emails', 'webhook_deliveries']) {
      this.addSql(`alter table "${table}" add column "requeued_at" timestamptz null;`);
    }
  }

  override down(): void | Promise<void> {
    for (const table of ['submissions', 'key_emails', 'webhook_deliveries']) {
      this.addSql(`alter table "${table}" drop column "requeued_at";`);
    }
  }
}
