import { Migration } from '@mikro-orm/migrations';

/**
 * API processes cache active keys (src/api/submissions/key-cache.ts). Every change that could alter
 * whether or how a key authenticates a submission (its state, domains, captcha, mailbox, or the
 * mailbox's consent) notifies them at commit, whoever makes it. Statement-level: one notification
 * per statement; `stored_bytes`, charged by submissions with files, is not watched.
 */
export class Migration20261123030000_key_changes extends Migration {
  override name = 'Migration20261123030000_key_changes';

  override up(): void | Promise<void> {
    this.addSql(
      `create function "cfs_notify_key_changes"() returns trigger language plpgsql as $$ begin perform pg_notify('cfs_key_changes', ''); return null; end $$;`,
    );
    this.addSql(
      `create trigger "verification_keys_changes" after update of "status", "use_domain", "domains", "captcha", "mailbox", "email", "key_hash" or delete or truncate on "verification_keys" for each statement execute function "cfs_notify_key_changes"();`,
    );
    this.addSql(
      `create trigger "recipients_changes" after insert or update or delete or truncate on "recipients" for each statement execute function "cfs_notify_key_changes"();`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop trigger "recipients_changes" on "recipients";`);
    this.addSql(`drop trigger "verification_keys_changes" on "verification_keys";`);
    this.addSql(`drop function "cfs_notify_key_changes"();`);
  }
}
