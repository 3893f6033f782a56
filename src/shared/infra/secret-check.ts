// Whether this process has the SECRET the data was written with. Keys, webhook signing secrets and
// sign-in links are sealed under SECRET (secrets.ts): with another one every key answers 403 and
// nothing sealed can be shown. So the database keeps one known text sealed under the SECRET of the
// first process that started on it (table secret_check), and every process opens it at start and
// stops when it cannot, before it has written anything under the wrong SECRET.
import pg from 'pg';
import { ConfigError } from './config.ts';
import type { Logger } from './log.ts';
import { createKeyVault } from './secrets.ts';
import { insertSecretCheck, newestSealedValues, readSecretCheck, replaceSecretCheck, sealedInUse } from './db/secret-check-rows.ts';

const CHECK_TEXT = 'contact-form-service: the SECRET this database was written with';
/** How often a process that started while PostgreSQL could not be reached tries the check again. */
const RECHECK_MS = 2_000;
/** A database host that swallows packets must not hold a start for the system's TCP timeout. */
const CONNECT_TIMEOUT_MS = 5_000;
export const LOST_SECRET_DOC = 'docs/operations.md#a-lost-secret';

/** A start refused because SECRET is not the one the data was written with; the message says what to do. */
export class SecretMismatchError extends ConfigError {
  override name = 'SecretMismatchError';
}

/**
 * Where the SECRET came from, for `npm start`'s message: its own file under DATA_DIR, or the
 * environment. Other processes take it from the environment only.
 */
export type SecretSource = { file: string; fromFile: boolean };

/**
 * Opens the database's check value with `secret`; writes it on the first start. Throws a
 * SecretMismatchError when it does not open, and a ConfigError when the table is missing.
 */
export async function checkSecret(databaseUrl: string, secret: string, source?: SecretSource): Promise<'written' | 'matched'> {
  const vault = createKeyVault(secret);
  const opens = (sealed: string) => vault.tryDecrypt(sealed) === CHECK_TEXT;
  const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
  await client.connect();
  try {
    let row = await readCheck(client);
    let outcome: 'written' | 'matched' = 'matched';
    if (!row) {
      // A database written before the check existed (or restored from such a backup): what it
      // already holds must open under this SECRET, or the check would be sealed under the wrong one.
      const stored = await newestSealedValues(client);
      if (stored.some((sealed) => vault.tryDecrypt(sealed) === undefined)) {
        throw new SecretMismatchError(mismatchMessage('the newest stored key or webhook secret does not open with this SECRET', source));
      }
      // Two first starts at once: one row wins, and the other process checks against it below.
      await insertSecretCheck(client, vault.encrypt(CHECK_TEXT));
      row = await readCheck(client);
      outcome = 'written';
    }
    if (!row || !opens(row.sealed)) {
      const since = row ? `, sealed by its first start on ${row.written_at.toISOString().slice(0, 16).replace('T', ' ')} UTC,` : '';
      throw new SecretMismatchError(mismatchMessage(`its check value${since} does not open with this SECRET`, source));
    }
    return outcome;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * The check as a long-running process (API, worker, bounce receiver) makes it at start. Another
 * SECRET than the data's throws, so the start fails before anything is opened. A database that
 * cannot be reached does not stop the start, since these processes ride out a PostgreSQL outage
 * (the API answers 503, the bounce receiver 451): the check is tried again every few seconds until
 * it can be made, and a mismatch found then is handed to `stopProcess`.
 */
export async function checkSecretAtStart(
  databaseUrl: string,
  secret: string,
  log: Logger,
  stopProcess: (error: ConfigError) => void,
): Promise<{ stop: () => void }> {
  try {
    await checkSecret(databaseUrl, secret);
    return { stop: () => undefined };
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    log.warn({ err: error }, `SECRET not checked yet: PostgreSQL cannot be reached; checked every ${RECHECK_MS / 1000} s until it can be`);
  }
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const later = () => {
    timer = setTimeout(() => {
      checkSecret(databaseUrl, secret).then(
        () => log.info('SECRET checked: it is the one the data was written with'),
        (error: unknown) => {
          if (stopped) return;
          if (error instanceof ConfigError) stopProcess(error);
          else later();
        },
      );
    }, RECHECK_MS);
    timer.unref();
  };
  later();
  return {
    stop: () => {
      stopped = true;
      clearTimeout(timer);
    },
  };
}

/**
 * For a SECRET lost for good: the database takes `secret` from now on. Nothing sealed under the
 * old one is rewritten (it cannot be opened): those keys stay unusable, and show as unavailable.
 */
export async function adoptSecret(databaseUrl: string, secret: string): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
  await client.connect();
  try {
    await replaceSecretCheck(client, createKeyVault(secret).encrypt(CHECK_TEXT));
  } catch (error) {
    throw missingTable(error);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * What adopting `secret` would leave unreadable: the keys (not deleted) and webhook endpoints whose
 * sealed values do not open with it, out of how many there are.
 */
export async function unreadableUnder(databaseUrl: string, secret: string): Promise<{ keys: number; webhooks: number; total: number }> {
  const vault = createKeyVault(secret);
  const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
  await client.connect();
  try {
    const sealed = await sealedInUse(client);
    const unreadable = sealed.filter((value) => vault.tryDecrypt(value.sealed) === undefined);
    return {
      keys: unreadable.filter((value) => value.kind === 'key').length,
      webhooks: unreadable.filter((value) => value.kind === 'webhook').length,
      total: sealed.length,
    };
  } catch (error) {
    throw missingTable(error);
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function readCheck(client: pg.Client): Promise<{ sealed: string; written_at: Date } | undefined> {
  try {
    return await readSecretCheck(client);
  } catch (error) {
    throw missingTable(error);
  }
}

/** The table comes with a migration: a database not migrated yet is told so, not a SQL error. */
function missingTable(error: unknown): unknown {
  if ((error as { code?: string }).code !== '42P01') return error;
  return new ConfigError(
    'The database has no table secret_check: its schema is older than this version. Run `npm run migrate` first (docs/upgrading.md#upgrades-and-migrations).',
  );
}

function mismatchMessage(what: string, source: SecretSource | undefined): string {
  const where = !source
    ? '`npm start` keeps the SECRET it made in DATA_DIR/secret (.data/secret by default).'
    : source.fromFile
      ? `npm start read this SECRET from ${source.file}: put the right one in that file (or set SECRET) and run npm start again.`
      : `npm start took this SECRET from the environment (SECRET); the one it made for this data directory, if any, is in ${source.file}.`;
  return [
    `SECRET is not the one this database was written with: ${what}.`,
    'Keys, webhook signing secrets and sign-in links are sealed under that SECRET: with this one every key would answer 403 and none could be shown. Nothing was changed, and this process stops.',
    `What to do: start again with the SECRET the data was written with (from your .env, your secret store or its backup). ${where}`,
    `If that SECRET is lost for good, ${LOST_SECRET_DOC} says how to go on without it.`,
  ].join('\n');
}
