import { Migration } from '@mikro-orm/migrations';

/**
 * A key's label, chosen by its owner ("Contact page, shop.example"), and whether it prefixes the
 * subject of the key's emails; and the full-text index the owner console searches messages with:
 * an expression index (no column to store or keep in step) over the visitor's address, the subject,
 * the message and the custom fields' values. `simple`: no language's stemming, since names,
 * addresses and messages come in any language. The expression is src/shared/infra/db/search.ts's, which
 * the search repeats word for word so that PostgreSQL uses the index.
 */
export class Migration20261127100000_key_labels_and_search extends Migration {
  override name = 'Migration20261127100000_key_labels_and_search';

  override up(): void | Promise<void> {
    this.addSql(`alter table "verification_keys" add column "label" varchar(100) null, add column "subject_prefix" boolean not null default false;`);
    this.addSql(
      `create index "submissions_search_idx" on "submissions" using gin ((to_tsvector('simple'::regconfig, "email" || ' ' || translate("email", '@.+_-', '     ') || ' ' || "subject" || ' ' || "message" || ' ' || jsonb_path_query_array("custom_fields", '$[*][1]')::text)));`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index "submissions_search_idx";`);
    this.addSql(`alter table "verification_keys" drop column "label", drop column "subject_prefix";`);
  }
}
