import { Migration } from '@mikro-orm/migrations';

// Chat channels: a webhook endpoint says what its requests look like (the signed generic event, or a
// chat platform's message), and a Telegram channel names its chat. Existing endpoints stay generic.
export class Migration20261128120000_chat_channels extends Migration {
  override name = 'Migration20261128120000_chat_channels';

  override up(): void | Promise<void> {
    this.addSql(`alter table "webhook_endpoints" add "kind" text not null default 'webhook', add "chat_id" varchar(64) null;`);
    this.addSql(
      `alter table "webhook_endpoints" add constraint "webhook_endpoints_kind_check" check ("kind" in ('webhook', 'slack', 'discord', 'teams', 'mattermost', 'telegram'));`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "webhook_endpoints" drop constraint "webhook_endpoints_kind_check";`);
    this.addSql(`alter table "webhook_endpoints" drop column "kind", drop column "chat_id";`);
  }
}
