import { Migration } from '@mikro-orm/migrations';

/**
 * The key cache (src/api/submissions/key-cache.ts) carries each key's enabled webhook endpoints, so a
 * change to endpoints notifies the API processes too, whoever makes it (API, CLI, or the worker that
 * disables a failing endpoint). The consecutive-failure count is not watched.
 */
export class Migration20261123033000_webhook_endpoint_changes extends Migration {
  override name = 'Migration20261123033000_webhook_endpoint_changes';

  override up(): void | Promise<void> {
    this.addSql(
      `create trigger "webhook_endpoints_changes" after insert or update of "enabled", "key_id" or delete or truncate on "webhook_endpoints" for each statement execute function "cfs_notify_key_changes"();`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop trigger "webhook_endpoints_changes" on "webhook_endpoints";`);
  }
}
