// Whole-database copies for `npm run backup` and `npm run restore`, through the node pg client and
// COPY (no pg_dump, whose version must match the server's): every table of the schema, read in one
// snapshot, loaded in one transaction, parents before children.
import type { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type pg from 'pg';
import { from as copyFrom, to as copyTo } from 'pg-copy-streams';

/** MikroORM's record of applied migrations: rebuilt by the migrations themselves on restore, never copied. */
export const MIGRATIONS_TABLE = 'mikro_orm_migrations';

/** A table and the columns it stores (generated ones are computed again on load). */
export type TableColumns = { name: string; columns: string[] };

/** A file the database names: where it is in the bucket and what it must hold. */
export type StoredObject = { key: string; contentType: string; size: number; sha256: string };

/**
 * Runs the reads of a backup in one snapshot: every query `read` makes on this client sees the
 * database as it was at its first statement, while the service goes on writing. On failure the
 * snapshot is left to the caller, whose closing the connection ends it.
 */
export async function readInSnapshot<T>(client: pg.Client, read: () => Promise<T>): Promise<T> {
  await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
  const result = await read();
  await client.query('COMMIT');
  return result;
}

/** The names of the applied migrations, oldest first; empty when none ran. */
export async function appliedMigrations(client: pg.Client): Promise<string[]> {
  const { rows: found } = await client.query<{ table: string | null }>('select to_regclass($1)::text as "table"', [MIGRATIONS_TABLE]);
  if (!found[0]?.table) return [];
  const { rows } = await client.query<{ name: string }>(`select name from ${client.escapeIdentifier(MIGRATIONS_TABLE)} order by id`);
  return rows.map((row) => row.name);
}

/** The tables of the current schema but the migrations' own, each after the tables it references. */
export async function listTables(client: pg.Client): Promise<TableColumns[]> {
  const { rows: tables } = await client.query<{ oid: number; name: string }>(
    `select c.oid::int as oid, c.relname as name from pg_class c
     where c.relnamespace = current_schema()::regnamespace and c.relkind = 'r' and not c.relispartition and c.relname <> $1
     order by c.relname`,
    [MIGRATIONS_TABLE],
  );
  const oids = tables.map((table) => table.oid);
  const { rows: columns } = await client.query<{ oid: number; name: string }>(
    `select attrelid::int as oid, attname as name from pg_attribute
     where attrelid = any($1::oid[]) and attnum > 0 and not attisdropped and attgenerated = ''
     order by attrelid, attnum`,
    [oids],
  );
  const { rows: references } = await client.query<{ child: number; parent: number }>(
    `select conrelid::int as child, confrelid::int as parent from pg_constraint
     where contype = 'f' and conrelid = any($1::oid[]) and confrelid <> conrelid`,
    [oids],
  );
  const nameOf = new Map(tables.map((table) => [table.oid, table.name]));
  const parents = new Map<string, Set<string>>(tables.map((table) => [table.name, new Set()]));
  for (const { child, parent } of references) {
    const parentName = nameOf.get(parent);
    if (parentName) parents.get(nameOf.get(child)!)!.add(parentName);
  }
  const ordered: string[] = [];
  const placed = new Set<string>();
  while (ordered.length < tables.length) {
    const ready = tables.map((table) => table.name).filter((name) => !placed.has(name) && [...parents.get(name)!].every((parent) => placed.has(parent)));
    if (!ready.length) throw new Error('the tables reference each other in a cycle: no order loads them');
    for (const name of ready) {
      ordered.push(name);
      placed.add(name);
    }
  }
  const columnsOf = (name: string) => columns.filter((column) => nameOf.get(column.oid) === name).map((column) => column.name);
  return ordered.map((name) => ({ name, columns: columnsOf(name) }));
}

const columnList = (client: pg.Client, table: TableColumns) =>
  `${client.escapeIdentifier(table.name)} (${table.columns.map((column) => client.escapeIdentifier(column)).join(', ')})`;

/** Writes the table's rows in COPY's text format; returns how many. */
export async function copyTableOut(client: pg.Client, table: TableColumns, destination: Writable): Promise<number> {
  const stream = client.query(copyTo(`COPY ${columnList(client, table)} TO STDOUT`));
  await pipeline(stream, destination);
  return stream.rowCount;
}

/** Loads rows written by copyTableOut; returns how many. */
export async function copyTableIn(client: pg.Client, table: TableColumns, source: Readable): Promise<number> {
  const stream = client.query(copyFrom(`COPY ${columnList(client, table)} FROM STDIN`));
  await pipeline(source, stream);
  return stream.rowCount;
}

/**
 * Moves each sequence of the schema (a bigserial id, say) past the largest value its column holds:
 * COPY writes the ids as they were and leaves the sequences where the migrations left them, so the
 * next insert would take an id a loaded row has.
 */
export async function advanceSequences(client: pg.Client): Promise<void> {
  const { rows } = await client.query<{ table_name: string; column_name: string; sequence: string }>(
    `select table_name, column_name, sequence from (
       select c.table_name, c.column_name, pg_get_serial_sequence(format('%I.%I', c.table_schema, c.table_name), c.column_name) as sequence
         from information_schema.columns c where c.table_schema = current_schema()) s
      where sequence is not null`,
  );
  for (const row of rows) {
    const [table, column] = [client.escapeIdentifier(row.table_name), client.escapeIdentifier(row.column_name)];
    await client.query(`select setval($1::regclass, coalesce((select max(${column}) from ${table}), 0) + 1, false)`, [row.sequence]);
  }
}

/** Every stored file the database names, with what its bytes must hash to. */
export async function storedObjects(client: pg.Client): Promise<StoredObject[]> {
  const { rows } = await client.query<StoredObject>(
    'select storage_key as "key", content_type as "contentType", size::float8 as size, sha256 from attachments order by created_at, id',
  );
  return rows;
}

/** The tables that hold at least one row, with a count capped at 1000 (enough to say what is there). */
export async function tablesWithRows(client: pg.Client, tables: TableColumns[]): Promise<Array<{ name: string; rows: number }>> {
  const found: Array<{ name: string; rows: number }> = [];
  for (const table of tables) {
    const { rows } = await client.query<{ n: number }>(`select count(*)::int as n from (select 1 from ${client.escapeIdentifier(table.name)} limit 1000) t`);
    if (rows[0]!.n > 0) found.push({ name: table.name, rows: rows[0]!.n });
  }
  return found;
}

/** Sessions on this database other than ours: the API, workers or other tools still connected. */
export async function otherSessions(client: pg.Client): Promise<number> {
  const { rows } = await client.query<{ n: number }>(
    'select count(*)::int as n from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()',
  );
  return rows[0]!.n;
}

/**
 * Drops what the migrations made in the current schema (every table, the migrations' record
 * included, and every function not belonging to an extension), so that they can build it again.
 * The schema itself and its grants stay.
 */
export async function dropSchemaObjects(client: pg.Client): Promise<void> {
  await client.query('BEGIN');
  try {
    const { rows: tables } = await client.query<{ name: string }>(
      `select relname as name from pg_class where relnamespace = current_schema()::regnamespace and relkind in ('r', 'p') and not relispartition`,
    );
    if (tables.length) await client.query(`DROP TABLE ${tables.map((table) => client.escapeIdentifier(table.name)).join(', ')} CASCADE`);
    const { rows: functions } = await client.query<{ signature: string }>(
      `select p.oid::regprocedure::text as signature from pg_proc p
       where p.pronamespace = current_schema()::regnamespace
         and not exists (select 1 from pg_depend d where d.classid = 'pg_proc'::regclass and d.objid = p.oid and d.deptype = 'e')`,
    );
    for (const { signature } of functions) await client.query(`DROP ROUTINE IF EXISTS ${signature} CASCADE`);
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK');
    throw error;
  }
}
