import { Migration } from '@mikro-orm/migrations';

// Idempotency keys: a client's retry of a submission with the same Idempotency-Key gets the first
// answer, and one stored submission.
export class Migration20261207140309_idempotency_keys extends Migration {
  override name = 'Migration20261207140309_idempotency_keys';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "idempotency_keys" ("key_id" uuid not null, "idempotency_key" varchar(255) not null, "fingerprint" varchar(43) not null, "submission_id" uuid not null, "created_at" timestamptz not null default now(), primary key ("key_id", "idempotency_key"));`,
    );
    this.addSql(`create index "idempotency_keys_submission_id_index" on "idempotency_keys" ("submission_id");`);
    this.addSql(`create index "idempotency_keys_created_idx" on "idempotency_keys" ("created_at");`);
    this.addSql(
      `alter table "idempotency_keys" add constraint "idempotency_keys_key_id_foreign" foreign key ("key_id") references "verification_keys" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "idempotency_keys" add constraint "idempotency_keys_submission_id_foreign" foreign key ("submission_id") references "submissions" ("id") on delete cascade;`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "idempotency_keys" cascade;`);
  }
}
