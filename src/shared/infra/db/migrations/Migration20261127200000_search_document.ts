import { Migration } from '@mikro-orm/migrations';

/** Rows filled per statement: each batch holds its rows' locks for a moment only. */
const BATCH = 2_000;

/**
 * The owner console's search reads a stored tsvector over a bounded prefix of each message
 * (src/shared/infra/db/search.ts), in a GIN index whose first column is the key: a search reads only
 * the key's entries, and never parses a message's text again. It replaces the expression index,
 * which parsed whole texts and held every key's rows under one word.
 *
 * Not in a transaction, so that no step locks the table for long on a large database
 * (docs/upgrading.md): the column is added empty (a catalog change), a trigger fills it for new and
 * changed rows, the old rows are filled in batches of their own, and the indexes are built and
 * dropped CONCURRENTLY. Run again after a failure, every step picks up where it stopped.
 */
export class Migration20261127200000_search_document extends Migration {
  override name = 'Migration20261127200000_search_document';

  override isTransactional(): boolean {
    return false;
  }

  override async up(): Promise<void> {
    // btree_gin puts the key's uuid in the GIN index beside the words (a trusted extension: the database's owner may create it).
    await this.execute(`create extension if not exists btree_gin;`);
    await this.execute(`alter table "submissions" add column if not exists "search_document" tsvector null;`);
    await this.execute(`create or replace function submissions_search_document(email text, subject text, message text, custom_fields jsonb) returns tsvector
      language sql immutable parallel safe as $$
        select to_tsvector('simple'::regconfig, email || ' ' || translate(email, '@.+_-', '     ') || ' ' || subject || ' '
          || left(message, 5000) || ' ' || left(jsonb_path_query_array(custom_fields, '$[*][1]')::text, 2000))
      $$;`);
    await this.execute(`create or replace function submissions_fill_search_document() returns trigger language plpgsql as $$
      begin
        new.search_document := submissions_search_document(new.email, new.subject, new.message, new.custom_fields);
        return new;
      end $$;`);
    await this.execute(`drop trigger if exists "submissions_search_document" on "submissions";`);
    await this.execute(`create trigger "submissions_search_document" before insert or update of "email", "subject", "message", "custom_fields" on "submissions"
      for each row execute function submissions_fill_search_document();`);
    for (;;) {
      const [done] = await this.execute(
        `with batch as (select id from submissions where search_document is null limit ${BATCH}),
              filled as (update submissions s set search_document = submissions_search_document(s.email, s.subject, s.message, s.custom_fields)
                           from batch where s.id = batch.id returning 1)
         select count(*)::int as n from filled`,
      );
      if (!(done as { n?: number } | undefined)?.n) break;
    }
    // An index left invalid by a build that failed is built again.
    await this.execute(`drop index concurrently if exists "submissions_key_search_idx";`);
    await this.execute(`create index concurrently "submissions_key_search_idx" on "submissions" using gin ("key_id", "search_document");`);
    await this.execute(`drop index concurrently if exists "submissions_search_idx";`);
  }

  override async down(): Promise<void> {
    await this.execute(`drop index concurrently if exists "submissions_key_search_idx";`);
    await this.execute(`drop trigger if exists "submissions_search_document" on "submissions";`);
    await this.execute(`drop function if exists submissions_fill_search_document();`);
    await this.execute(`alter table "submissions" drop column if exists "search_document";`);
    await this.execute(`drop function if exists submissions_search_document(text, text, text, jsonb);`);
    await this.execute(
      `create index concurrently if not exists "submissions_search_idx" on "submissions" using gin ((to_tsvector('simple'::regconfig, "email" || ' ' || translate("email", '@.+_-', '     ') || ' ' || "subject" || ' ' || "message" || ' ' || jsonb_path_query_array("custom_fields", '$[*][1]')::text)));`,
    );
  }
}
