import { Migration } from '@mikro-orm/migrations';

// An autoresponse test: the key's autoresponse sent to its owner from the settings page, a key email
// of a kind of its own. The new check is added NOT VALID, then validated: the validation reads the
// table without blocking its writes.
export class Migration20261207200000_autoresponse_tests extends Migration {
  override name = 'Migration20261207200000_autoresponse_tests';

  override up(): void | Promise<void> {
    this.addSql(`alter table "key_emails" drop constraint if exists "key_emails_kind_check";`);
    this.addSql(
      `alter table "key_emails" add constraint "key_emails_kind_check" check ("kind" in ('new-key', 'all-keys', 'confirm', 'sign-in', 'webhook-disabled', 'recipient-confirm', 'autoresponse-test')) not valid;`,
    );
    this.addSql(`alter table "key_emails" validate constraint "key_emails_kind_check";`);
  }

  override down(): void | Promise<void> {
    this.addSql(`delete from "key_emails" where "kind" = 'autoresponse-test';`);
    this.addSql(`alter table "key_emails" drop constraint if exists "key_emails_kind_check";`);
    this.addSql(
      `alter table "key_emails" add constraint "key_emails_kind_check" check ("kind" in ('new-key', 'all-keys', 'confirm', 'sign-in', 'webhook-disabled', 'recipient-confirm'));`,
    );
  }
}
