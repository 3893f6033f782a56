// What `npm run backup` writes and `npm run restore` reads, and where both find the service's data:
// as `npm start` does, each of DATABASE_URL, S3_ENDPOINT and SECRET when set, else DATA_DIR's own.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { exitOnConfigError, loadConfigSubset } from '../shared/infra/config.ts';
import type { TableColumns } from '../shared/infra/db/table-copy.ts';
import { createStorage, type Storage } from '../shared/infra/storage.ts';

export const ARCHIVE_FORMAT = 'contact-form-service backup';
/** Version 2 records the size and SHA-256 of every file in the archive; version 1 those of the stored files only. */
export const ARCHIVE_VERSION = 2;
/** Archives of version 1 are still restored: their table files are checked for place, type and row count. */
export const READABLE_VERSIONS: readonly number[] = [1, ARCHIVE_VERSION];

/**
 * The archive (a .tar.gz) holds manifest.json, `secret` (SECRET, one line), database/<n>-<table>.copy
 * (COPY text format) and files/<n> (the bytes of each stored file), in that order. Each entry's
 * size and SHA-256 are those of the bytes in the archive.
 */
export type Manifest = {
  format: typeof ARCHIVE_FORMAT;
  version: number;
  createdAt: string;
  /** The migrations applied to the database, oldest first: restore builds the schema with exactly these. */
  migrations: string[];
  /** size and sha256 are absent in archives of version 1. */
  tables: Array<TableColumns & Partial<Digest> & { rows: number; file: string }>;
  files: Array<{ key: string; contentType: string; file: string } & Digest>;
};

export type Digest = { size: number; sha256: string };

/** The size and SHA-256 of a file's bytes. */
export async function digestFile(file: string): Promise<Digest> {
  const hash = createHash('sha256');
  let size = 0;
  await pipeline(createReadStream(file), async (chunks: AsyncIterable<Buffer>) => {
    for await (const chunk of chunks) {
      hash.update(chunk);
      size += chunk.length;
    }
  });
  return { size, sha256: hash.digest('hex') };
}

export const MANIFEST = 'manifest.json';
export const SECRET_ENTRY = 'secret';

/** A refusal or failure the user can act on: printed as it is, without a stack, exit code 1. */
export class UserError extends Error {
  override name = 'UserError';
}

const S3_SETTINGS = ['S3_ENDPOINT', 'S3_PUBLIC_ENDPOINT', 'S3_REGION', 'S3_BUCKET', 'S3_ACCESS_KEY_ID', 'S3_SECRET_ACCESS_KEY', 'S3_FORCE_PATH_STYLE'] as const;

export type Settings = ReturnType<typeof readSettings>;

/** The settings both tools read, validated as the service validates them. */
export function readSettings(env: NodeJS.ProcessEnv = process.env) {
  const set = (name: string) => Boolean(env[name]?.trim());
  return exitOnConfigError(() => {
    const common = loadConfigSubset([...S3_SETTINGS, 'DATA_DIR'], env);
    return {
      ...common,
      /** As npm start resolves it: against the project directory npm runs scripts in. */
      dataDir: path.resolve(common.DATA_DIR),
      // PostgreSQL itself: a backup's or a restore's session never goes through a pooler.
      DATABASE_URL: set('DATABASE_DIRECT_URL')
        ? loadConfigSubset(['DATABASE_DIRECT_URL'], env).DATABASE_DIRECT_URL
        : set('DATABASE_URL')
          ? loadConfigSubset(['DATABASE_URL'], env).DATABASE_URL
          : undefined,
      SECRET: set('SECRET') ? loadConfigSubset(['SECRET'], env).SECRET : undefined,
    };
  });
}

/** A path the user typed, taken from the directory they ran npm in (npm runs scripts in the project's). */
export const userPath = (file: string) => path.resolve(process.env.INIT_CWD ?? process.cwd(), file);

/** The local services' module, loaded only when DATA_DIR is used: production images lack its packages. */
export const localDataDir = () => import('../local/data-dir.ts');

/** The bucket: S3_ENDPOINT's, or DATA_DIR/s3 through an S3 server started for the while. */
export async function openStorage(settings: Settings): Promise<{ storage: Storage; where: string; stop: () => Promise<void> }> {
  if (settings.S3_ENDPOINT) {
    const storage = createStorage(settings);
    return { storage, where: `bucket ${settings.S3_BUCKET} at ${settings.S3_ENDPOINT}`, stop: async () => storage.close() };
  }
  const { localPaths, startLocalS3 } = await localDataDir();
  const s3 = await startLocalS3(settings.dataDir, settings.S3_BUCKET);
  const storage = createStorage({
    ...settings,
    S3_ENDPOINT: s3.url,
    S3_PUBLIC_ENDPOINT: undefined,
    S3_ACCESS_KEY_ID: s3.credentials.accessKeyId,
    S3_SECRET_ACCESS_KEY: s3.credentials.secretAccessKey,
    S3_FORCE_PATH_STYLE: true,
  });
  return {
    storage,
    where: `bucket ${settings.S3_BUCKET} in ${localPaths(settings.dataDir).s3}`,
    async stop() {
      storage.close();
      await s3.stop();
    },
  };
}

/** Runs a command-line tool: a UserError is its message and exit code 1; anything else, its stack. */
export function runTool(main: () => Promise<number>): void {
  main().then(
    (code) => process.exit(code),
    (error: unknown) => {
      process.stderr.write(error instanceof UserError ? `\n${error.message}\n\n` : `${error instanceof Error ? error.stack : String(error)}\n`);
      process.exit(1);
    },
  );
}

export const plural = (count: number, word: string) => `${count} ${word}${count === 1 ? '' : 's'}`;
