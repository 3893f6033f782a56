import { Migration } from '@mikro-orm/migrations';

/**
 * One value sealed under the SECRET the database was first started with (src/shared/infra/secret-check.ts),
 * so that a process started with another SECRET stops at once instead of answering 403 to every key.
 * The row is written by the first process to start, not here: a migration does not need SECRET.
 */
export class Migration20261127010000_secret_check extends Migration {
  override name = 'Migration20261127010000_secret_check';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "secret_check" ("id" int not null, "sealed" text not null, "written_at" timestamptz not null default now(), primary key ("id"));`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table "secret_check";`);
  }
}
