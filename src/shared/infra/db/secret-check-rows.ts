// The queries of the start-up secret check (../secret-check.ts says what is done with them): the
// secret_check table's one row, a known text sealed under the SECRET of the first start, and the
// newest sealed values the check falls back on for a database written before the table existed.
import type pg from 'pg';

/** The table's one row. */
const CHECK_ID = 1;

export async function readSecretCheck(client: pg.Client): Promise<{ sealed: string; written_at: Date } | undefined> {
  const { rows } = await client.query<{ sealed: string; written_at: Date }>('select sealed, written_at from secret_check where id = $1', [CHECK_ID]);
  return rows[0];
}

/** The newest key's and the newest webhook endpoint's sealed values (none, one or two). */
export async function newestSealedValues(client: pg.Client): Promise<string[]> {
  const { rows } = await client.query<{ sealed: string }>(
    `(select key_encrypted as sealed from verification_keys order by created_at desc limit 1)
     union all (select secret_sealed from webhook_endpoints order by created_at desc limit 1)`,
  );
  return rows.map((row) => row.sealed);
}

/** Every sealed value still in use: those of the keys not deleted, and of the webhook endpoints. */
export async function sealedInUse(client: pg.Client): Promise<Array<{ kind: 'key' | 'webhook'; sealed: string }>> {
  const { rows } = await client.query<{ kind: 'key' | 'webhook'; sealed: string }>(
    `select 'key' as kind, key_encrypted as sealed from verification_keys where status <> 'deleted'
     union all select 'webhook', secret_sealed from webhook_endpoints`,
  );
  return rows;
}

/** Writes the check value unless one is there already (two first starts at once: one row wins). */
export async function insertSecretCheck(client: pg.Client, sealed: string): Promise<void> {
  await client.query('insert into secret_check (id, sealed) values ($1, $2) on conflict (id) do nothing', [CHECK_ID, sealed]);
}

/** Writes the check value in place of the one there, if any. */
export async function replaceSecretCheck(client: pg.Client, sealed: string): Promise<void> {
  await client.query(
    `insert into secret_check (id, sealed) values ($1, $2)
     on conflict (id) do update set sealed = excluded.sealed, written_at = now()`,
    [CHECK_ID, sealed],
  );
}
