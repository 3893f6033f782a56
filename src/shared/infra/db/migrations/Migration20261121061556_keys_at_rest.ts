import { Migration } from '@mikro-orm/migrations';
import { loadConfigSubset } from '../../config.ts';
import { createKeyVault } from '../../secrets.ts';

/**
 * Keys at rest: replaces the plain `key` column by an HMAC lookup index and an AES-GCM sealed copy
 * (src/shared/infra/secrets.ts). Existing keys are converted with SECRET, which must then be set.
 */
export class Migration20261121061556_keys_at_rest extends Migration {
  override name = 'Migration20261121061556_keys_at_rest';

  override async up(): Promise<void> {
    await this.execute(`alter table "verification_keys" add "key_hash" varchar(64) null, add "key_encrypted" text null, add "captcha" text null;`);
    await this.execute(`alter table "verification_keys" add constraint "verification_keys_captcha_check" check ("captcha" in ('hcaptcha', 'turnstile'));`);

    const existing = (await this.execute(`select "id", "key" from "verification_keys"`)) as Array<{ id: string; key: string }>;
    if (existing.length > 0) {
      // Read here rather than at start: only a database that already holds keys needs the secret.
      const vault = createKeyVault(loadConfigSubset(['SECRET']).SECRET);
      for (const row of existing) {
        await this.execute(`update "verification_keys" set "key_hash" = ?, "key_encrypted" = ? where "id" = ?`, [
          vault.hash(row.key),
          vault.encrypt(row.key),
          row.id,
        ]);
      }
    }

    await this.execute(`alter table "verification_keys" alter column "key_hash" set not null, alter column "key_encrypted" set not null;`);
    await this.execute(`alter table "verification_keys" drop constraint "verification_keys_key_unique";`);
    await this.execute(`alter table "verification_keys" drop column "key";`);
    await this.execute(`alter table "verification_keys" add constraint "verification_keys_key_hash_unique" unique ("key_hash");`);
    await this.execute(`create index "key_emails_email_created_idx" on "key_emails" ("email", "created_at");`);
  }
}
