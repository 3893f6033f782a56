import { Migration } from '@mikro-orm/migrations';

// The autoresponse's bounds per key and per owner: the operator's review of a key's autoresponse,
// since when the key's captcha has been asked (kept by a trigger, whoever changes it), the new
// outcomes, and the index the daily counts read.
export class Migration20261207132731_autoresponse_bounds extends Migration {
  override name = 'Migration20261207132731_autoresponse_bounds';

  override up(): void | Promise<void> {
    this.addSql(`alter table "verification_keys" add "captcha_required_since" timestamptz null, add "autoresponse_review" text null;`);
    this.addSql(
      `alter table "verification_keys" add constraint "verification_keys_autoresponse_review_check" check ("autoresponse_review" in ('approved', 'blocked'));`,
    );
    // A key that asks a captcha already: since its last change at the latest.
    this.addSql(`update "verification_keys" set "captcha_required_since" = "updated_at" where "captcha" is not null;`);
    this.addSql(
      `create function "cfs_captcha_required_since"() returns trigger language plpgsql as $$ begin
  if tg_op = 'INSERT' or new.captcha is distinct from old.captcha then
    new.captcha_required_since := case when new.captcha is null then null else now() end;
  end if;
  return new;
end $$;`,
    );
    this.addSql(
      `create trigger "verification_keys_captcha_required_since" before insert or update of "captcha" on "verification_keys" for each row execute function "cfs_captcha_required_since"();`,
    );

    this.addSql(`alter table "submissions" drop constraint "submissions_autoresponse_check";`);
    this.addSql(
      `alter table "submissions" add constraint "submissions_autoresponse_check" check ("autoresponse" in ('pending', 'sent', 'failed', 'off', 'not_confirmed', 'spam', 'unchecked', 'filter_off', 'suppressed', 'role_address', 'limit_key', 'limit_address', 'operator_off', 'not_approved', 'no_captcha', 'unusual_address', 'text_refused', 'limit_key_day', 'limit_owner_day'));`,
    );

    this.addSql(`create index "autoresponses_key_created_idx" on "autoresponses" ("key_id", "created_at");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index "autoresponses_key_created_idx";`);
    this.addSql(
      `update "submissions" set "autoresponse" = 'off' where "autoresponse" in ('operator_off', 'not_approved', 'no_captcha', 'unusual_address', 'text_refused', 'limit_key_day', 'limit_owner_day');`,
    );
    this.addSql(`alter table "submissions" drop constraint "submissions_autoresponse_check";`);
    this.addSql(
      `alter table "submissions" add constraint "submissions_autoresponse_check" check ("autoresponse" in ('pending', 'sent', 'failed', 'off', 'not_confirmed', 'spam', 'unchecked', 'filter_off', 'suppressed', 'role_address', 'limit_key', 'limit_address'));`,
    );
    this.addSql(`drop trigger "verification_keys_captcha_required_since" on "verification_keys";`);
    this.addSql(`drop function "cfs_captcha_required_since"();`);
    this.addSql(`alter table "verification_keys" drop constraint "verification_keys_autoresponse_review_check";`);
    this.addSql(`alter table "verification_keys" drop column "captcha_required_since", drop column "autoresponse_review";`);
  }
}
