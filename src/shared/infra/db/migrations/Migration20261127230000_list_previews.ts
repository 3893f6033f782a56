import { Migration } from '@mikro-orm/migrations';

/**
 * A list of submissions shows each field's value cut short (src/shared/submissions/data/submission-rows.ts,
 * findSubmissionPreviews). Cutting them on every read would unpack each row's whole `custom_fields`
 * (up to 800 KB), so a trigger stores the cut values once, on insert and on a change of the fields,
 * with whether any was cut. The bound, 500 characters, is the list's (LIST_PREVIEW).
 *
 * Rows stored before this migration keep null there and are cut on read, as before: filling them
 * would rewrite every row of the table. Not in a transaction, like the search document's migration.
 */
export class Migration20261127230000_list_previews extends Migration {
  override name = 'Migration20261127230000_list_previews';

  override isTransactional(): boolean {
    return false;
  }

  override async up(): Promise<void> {
    await this.execute(
      `alter table "submissions" add column if not exists "fields_preview" jsonb null, add column if not exists "fields_truncated" boolean null;`,
    );
    await this.execute(`create or replace function submissions_fill_fields_preview() returns trigger language plpgsql as $$
      begin
        select coalesce(jsonb_agg(jsonb_build_array(f ->> 0, left(f ->> 1, 500)) order by n), '[]'::jsonb),
               coalesce(bool_or(length(f ->> 1) > 500), false)
          into new.fields_preview, new.fields_truncated
          from jsonb_array_elements(new.custom_fields) with ordinality as e(f, n);
        return new;
      end $$;`);
    await this.execute(`drop trigger if exists "submissions_fields_preview" on "submissions";`);
    await this.execute(`create trigger "submissions_fields_preview" before insert or update of "custom_fields" on "submissions"
      for each row execute function submissions_fill_fields_preview();`);
  }

  override async down(): Promise<void> {
    await this.execute(`drop trigger if exists "submissions_fields_preview" on "submissions";`);
    await this.execute(`drop function if exists submissions_fill_fields_preview();`);
    await this.execute(`alter table "submissions" drop column if exists "fields_preview", drop column if exists "fields_truncated";`);
  }
}
