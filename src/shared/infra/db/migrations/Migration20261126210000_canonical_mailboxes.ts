import { Migration } from '@mikro-orm/migrations';

/** The providers whose every spelling of a name reaches one inbox, as the mailbox rule had them then. */
const DOTLESS = `('gmail.com', 'googlemail.com')`;
const localOf = (column: string) => `substring(${column} from '^(.*)@[^@]*$')`;
const domainOf = (column: string) => `substring(${column} from '@([^@]*)$')`;
/** The mailbox rule's new part in SQL: no dots in the local part, and the provider's first domain. */
const canonical = (column: string) => `replace(${localOf(column)}, '.', '') || '@gmail.com'`;
const stale = (column: string) => `${domainOf(column)} in ${DOTLESS} and ${column} <> ${canonical(column)}`;

/**
 * A mailbox is now also the same inbox at Gmail whatever its dots, and at googlemail.com: the
 * stored mailboxes are rewritten, and the per-mailbox rows of two spellings merged (consent kept
 * if either had confirmed, allowances and counts added up). An owner's spam marks under an old
 * spelling are dropped, since the filter's own statistics for that owner are kept under the mailbox's
 * name and start anew under the new one.
 */
export class Migration20261126210000_canonical_mailboxes extends Migration {
  override name = 'Migration20261126210000_canonical_mailboxes';

  override up(): void | Promise<void> {
    for (const table of ['verification_keys', 'key_emails']) {
      this.addSql(`update "${table}" set "mailbox" = ${canonical('"mailbox"')} where ${stale('"mailbox"')};`);
    }
    this.addSql(`insert into "recipients" ("mailbox", "confirmed_at", "confirm_requested_at", "created_at")
      select ${canonical('"mailbox"')}, min("confirmed_at"), min("confirm_requested_at"), min("created_at") from "recipients" where ${stale('"mailbox"')}
       group by 1
      on conflict ("mailbox") do update set "confirmed_at" = least("recipients"."confirmed_at", excluded."confirmed_at"),
        "confirm_requested_at" = least("recipients"."confirm_requested_at", excluded."confirm_requested_at");`);
    this.addSql(`delete from "recipients" where ${stale('"mailbox"')};`);
    this.addSql(`insert into "mailbox_complaints" ("mailbox", "complained_at")
      select ${canonical('"mailbox"')}, max("complained_at") from "mailbox_complaints" where ${stale('"mailbox"')} group by 1
      on conflict ("mailbox") do update set "complained_at" = greatest("mailbox_complaints"."complained_at", excluded."complained_at");`);
    this.addSql(`delete from "mailbox_complaints" where ${stale('"mailbox"')};`);
    this.addSql(`insert into "mailbox_allowances" ("mailbox", "window_start", "used")
      select ${canonical('"mailbox"')}, "window_start", sum("used") from "mailbox_allowances" where ${stale('"mailbox"')} group by 1, 2
      on conflict ("mailbox", "window_start") do update set "used" = "mailbox_allowances"."used" + excluded."used";`);
    this.addSql(`delete from "mailbox_allowances" where ${stale('"mailbox"')};`);
    this.addSql(`delete from "owner_spam_marks" where ${stale('"mailbox"')};`);
  }

  override down(): void | Promise<void> {
    // The spellings merged are not kept: the rows stay under the inbox's one name.
  }
}
