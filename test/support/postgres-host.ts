// PostgreSQL on a host of its own, for the partition tests: run on that host
// (`ip netns exec NS node test/support/postgres-host.ts DIR ADDRESS`), it starts a throwaway cluster
// listening on ADDRESS:5432 that trusts the host's /24, prints `ready <url>`, and stops it on SIGTERM.
import { readlink, appendFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { startPostgres } from '../../src/local/services.ts';

const [dir, address] = process.argv.slice(2);
if (!dir || !address) throw new Error('usage: postgres-host.ts DIR ADDRESS');
const PORT = 5432;

const postgres = await startPostgres({ dir, persistent: false, port: PORT, listen: address, database: 'contact_form' });
// As root the cluster is where `dir` links to; it trusts loopback only until told otherwise.
const cluster = await readlink(dir).catch(() => dir);
const network = `${address.split('.').slice(0, 3).join('.')}.0/24`;
await appendFile(path.join(path.resolve(path.dirname(dir), cluster), 'pg_hba.conf'), `host all all ${network} trust\n`);
const admin = new pg.Client({ connectionString: postgres.url });
await admin.connect();
await admin.query('select pg_reload_conf()');
await admin.end();

let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  void postgres.stop().finally(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
process.stdout.write(`ready postgres://postgres:postgres@${address}:${PORT}/contact_form\n`);
