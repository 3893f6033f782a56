import { Migration } from '@mikro-orm/migrations';

/** A key's captcha may also be `altcha`: a proof-of-work challenge this service issues and checks itself. */
export class Migration20261128010000_altcha_captcha extends Migration {
  override name = 'Migration20261128010000_altcha_captcha';

  override up(): void | Promise<void> {
    this.addSql(`alter table "verification_keys" drop constraint "verification_keys_captcha_check";`);
    this.addSql(`alter table "verification_keys" add constraint "verification_keys_captcha_check" check ("captcha" in ('hcaptcha', 'turnstile', 'altcha'));`);
  }

  override down(): void | Promise<void> {
    this.addSql(`update "verification_keys" set "captcha" = null where "captcha" = 'altcha';`);
    this.addSql(`alter table "verification_keys" drop constraint "verification_keys_captcha_check";`);
    this.addSql(`alter table "verification_keys" add constraint "verification_keys_captcha_check" check ("captcha" in ('hcaptcha', 'turnstile'));`);
  }
}
