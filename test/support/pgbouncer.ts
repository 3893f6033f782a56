// A real PgBouncer (Debian 12's 1.18) in transaction mode on a free loopback port, its files in a
// temporary directory of its own, in front of one database of the tests' PostgreSQL. Two pools, as
// docs/deploying.md#pgbouncer sets them up: `cfs` for the API, the bounce receiver and the tools,
// `cfs_worker` for the workers, each setting the statement bounds the service cannot send through
// it. Stopped by PID, also when the test fails (spawnTracked).
import type { ChildProcess } from 'node:child_process';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { inject } from 'vitest';
import { freePort, stopChild } from '../../src/local/services.ts';
import { spawnTracked, waitForOutput } from '../../src/local/processes.ts';

/** Server connections each pool may open: PostgreSQL sees at most the two together. */
export const POOL_SIZE = { api: 6, worker: 6 } as const;

export type PgBouncer = {
  /** DATABASE_URL for the API, the bounce receiver and the tools. */
  apiUrl: string;
  /** DATABASE_URL for the workers. */
  workerUrl: string;
  /** What PgBouncer logged: the evidence when a test fails. */
  output: () => string;
  stop: () => Promise<void>;
};

/** `databaseUrl`: the database (on the tests' PostgreSQL) both pools lead to. */
export async function startPgBouncer(databaseUrl: string): Promise<PgBouncer> {
  const found = inject('testTools').pgbouncer!;
  if (found.problem !== undefined) throw new Error(found.problem);
  const server = new URL(databaseUrl);
  const user = decodeURIComponent(server.username);
  const password = decodeURIComponent(server.password);
  const database = server.pathname.slice(1);
  // PgBouncer refuses to run as root: it then runs as nobody, who must read its files.
  const asRoot = process.getuid?.() === 0;
  const dir = await mkdtemp(path.join(tmpdir(), 'cfs-pgbouncer-'));
  await chmod(dir, 0o755);
  const port = await freePort();
  const entry = (name: string, poolSize: number, statementMs: number) =>
    `${name} = host=${server.hostname} port=${server.port || 5432} dbname=${database} user=${user}${password ? ` password=${password}` : ''} pool_size=${poolSize} ` +
    `connect_query='set statement_timeout = ${statementMs}; set idle_in_transaction_session_timeout = 30000'`;
  const files = {
    ini: path.join(dir, 'pgbouncer.ini'),
    users: path.join(dir, 'users.txt'),
  };
  await writeFile(
    files.ini,
    [
      '[databases]',
      entry('cfs', POOL_SIZE.api, 4_000),
      entry('cfs_worker', POOL_SIZE.worker, 60_000),
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${files.users}`,
      'pool_mode = transaction',
      // Clients: every pool of every process (the API's 20, each worker's 14, …) together.
      'max_client_conn = 1000',
      'reserve_pool_size = 0',
      '',
    ].join('\n'),
    { mode: 0o644 },
  );
  await writeFile(files.users, `"${user}" ""\n`, { mode: 0o644 });
  const child: ChildProcess = spawnTracked('SIGTERM', found.path, [...(asRoot ? ['-u', 'nobody'] : []), files.ini], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const keep = (chunk: Buffer) => (output += chunk.toString());
  try {
    await waitForOutput(child, /process up: PgBouncer/, 'pgbouncer');
  } catch (error) {
    await stopChild(child, 'SIGKILL');
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const url = (name: string) => `postgres://${encodeURIComponent(user)}@127.0.0.1:${port}/${name}`;
  return {
    apiUrl: url('cfs'),
    workerUrl: url('cfs_worker'),
    output: () => output,
    async stop() {
      // SIGTERM: PgBouncer's immediate shutdown.
      await stopChild(child, 'SIGTERM', 5_000);
      await rm(dir, { recursive: true, force: true });
    },
  };
}
