// The queries of the submissions CSV export beyond the paged list of rows (listSubmissions).
import type { EntityManager } from '@mikro-orm/postgresql';

/** The custom field names of the key's submissions, in order of first appearance. */
export async function customFieldNames(em: EntityManager, keyHash: string): Promise<string[]> {
  const rows = await em.execute<Array<{ name: string }>>(
    `select name from (
       select distinct on (field.pair->>0) field.pair->>0 as name, s.created_at, field.position
         from submissions s
         join verification_keys k on k.id = s.key_id
         cross join lateral jsonb_array_elements(s.custom_fields) with ordinality as field(pair, position)
        where k.key_hash = ?
        order by field.pair->>0, s.created_at, s.id, field.position) firsts
     order by created_at, position`,
    [keyHash],
  );
  return rows.map((row) => row.name);
}
