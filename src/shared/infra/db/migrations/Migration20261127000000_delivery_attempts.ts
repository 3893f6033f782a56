import { Migration } from '@mikro-orm/migrations';

/**
 * The delivery history of submission emails: one row per attempt (its time, the server's reply or
 * the error, the worker), which a re-send adds to and never erases, deleted with its submission.
 * And when a `retrying` submission is tried next: the end of its job's retry timer.
 */
export class Migration20261127000000_delivery_attempts extends Migration {
  override name = 'Migration20261127000000_delivery_attempts';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "delivery_attempts" ("id" bigserial primary key, "submission_id" uuid not null, "attempt" int not null, "attempted_at" timestamptz not null default now(), "outcome" text not null, "response" text null, "worker" varchar(255) not null);`,
    );
    this.addSql(`create index "delivery_attempts_submission_idx" on "delivery_attempts" ("submission_id", "id");`);
    this.addSql(`alter table "submissions" add "next_attempt_at" timestamptz null;`);
    this.addSql(
      `alter table "delivery_attempts" add constraint "delivery_attempts_submission_id_foreign" foreign key ("submission_id") references "submissions" ("id") on delete cascade;`,
    );
    this.addSql(`alter table "delivery_attempts" add constraint "delivery_attempts_outcome_check" check ("outcome" in ('sent', 'retrying', 'failed'));`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "delivery_attempts";`);
    this.addSql(`alter table "submissions" drop column "next_attempt_at";`);
  }
}
