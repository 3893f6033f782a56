import { Migration } from '@mikro-orm/migrations';

// The owner's layout of a key's notification email: a subject pattern, custom fields shown first or
// left out, files attached or linked. The defaults are the email as it was.
export class Migration20261128021824_email_layout extends Migration {
  override name = 'Migration20261128021824_email_layout';

  override up(): void | Promise<void> {
    this.addSql(
      `alter table "verification_keys" add "email_subject" varchar(200) null, add "email_field_order" jsonb not null default '[]', add "email_hidden_fields" jsonb not null default '[]', add "email_files" text not null default 'attach';`,
    );
    this.addSql(`alter table "verification_keys" add constraint "verification_keys_email_files_check" check ("email_files" in ('attach', 'link'));`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "verification_keys" drop constraint "verification_keys_email_files_check";`);
    this.addSql(
      `alter table "verification_keys" drop column "email_subject", drop column "email_field_order", drop column "email_hidden_fields", drop column "email_files";`,
    );
  }
}
