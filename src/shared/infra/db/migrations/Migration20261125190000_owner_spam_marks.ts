import { Migration } from '@mikro-orm/migrations';

/**
 * The marks taught to the spam filter for each owner (mailbox), which never go down: a check reads
 * the owner's own statistics only once they can tell (rspamd's min_learns for the owner's
 * classifier). Filled from the marks taught so far.
 */
export class Migration20261125190000_owner_spam_marks extends Migration {
  override name = 'Migration20261125190000_owner_spam_marks';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "owner_spam_marks" ("mailbox" varchar(254) not null, "spam" int not null default 0, "ham" int not null default 0, primary key ("mailbox"));`,
    );
    this.addSql(`insert into "owner_spam_marks" ("mailbox", "spam", "ham")
      select k."mailbox", count(*) filter (where s."spam_mark" = 'spam'), count(*) filter (where s."spam_mark" = 'ham')
        from "submissions" s join "verification_keys" k on k."id" = s."key_id"
       where s."spam_taught_at" is not null
       group by k."mailbox";`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "owner_spam_marks";`);
  }
}
