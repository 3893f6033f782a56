import { Migration } from '@mikro-orm/migrations';

/**
 * Hard bounces count per address exactly as it was mailed, no longer per mailbox: an address that
 * a stranger spelled with a +tag its server refuses bounces on its own, and mail to the owner's
 * own spelling goes on. Complaints stay per mailbox (`mailbox_complaints`): only the inbox's
 * provider sends them. An existing count carries over to the mailbox's untagged address.
 */
export class Migration20261126200000_address_bounces extends Migration {
  override name = 'Migration20261126200000_address_bounces';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "address_bounces" ("address" varchar(254) not null, "hard_bounces" int not null default 0, "last_bounced_at" timestamptz null, "suppressed_until" timestamptz null, primary key ("address"));`,
    );
    this.addSql(`insert into "address_bounces" ("address", "hard_bounces", "last_bounced_at", "suppressed_until")
      select "mailbox", "hard_bounces", "last_bounced_at", "suppressed_until" from "mailbox_bounces" where "hard_bounces" > 0;`);
    this.addSql(`delete from "mailbox_bounces" where "complained_at" is null;`);
    this.addSql(`alter table "mailbox_bounces" drop column "hard_bounces", drop column "last_bounced_at", drop column "suppressed_until";`);
    this.addSql(`alter table "mailbox_bounces" alter column "complained_at" set not null;`);
    this.addSql(`alter table "mailbox_bounces" rename to "mailbox_complaints";`);
    this.addSql(`alter table "mailbox_complaints" rename constraint "mailbox_bounces_pkey" to "mailbox_complaints_pkey";`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "mailbox_complaints" rename constraint "mailbox_complaints_pkey" to "mailbox_bounces_pkey";`);
    this.addSql(`alter table "mailbox_complaints" rename to "mailbox_bounces";`);
    this.addSql(`alter table "mailbox_bounces" alter column "complained_at" drop not null;`);
    this.addSql(
      `alter table "mailbox_bounces" add column "hard_bounces" int not null default 0, add column "last_bounced_at" timestamptz null, add column "suppressed_until" timestamptz null;`,
    );
    this.addSql(`insert into "mailbox_bounces" ("mailbox", "hard_bounces", "last_bounced_at", "suppressed_until")
      select "address", "hard_bounces", "last_bounced_at", "suppressed_until" from "address_bounces"
      on conflict ("mailbox") do update set "hard_bounces" = excluded."hard_bounces", "last_bounced_at" = excluded."last_bounced_at", "suppressed_until" = excluded."suppressed_until";`);
    this.addSql(`drop table "address_bounces";`);
  }
}
