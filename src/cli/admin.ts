// `npm run admin -- <command>`: operator commands over the same key rules as the API.
// Needs DATABASE_URL and SECRET.
import { exitOnConfigError, loadConfigSubset } from '../shared/config.ts';
import type { VerificationKey } from '../shared/db/entities.ts';
import { createOrm } from '../shared/db/orm.ts';
import { KeyRuleError, listKeys, parseDomains, updateKey } from '../shared/keys.ts';
import { createKeyVault, type KeyVault } from '../shared/secrets.ts';

const USAGE = `Usage: npm run admin -- <command>
  keys list <email>                 the address's keys and their states
  keys disable <key>                active → disabled
  keys enable <key>                 disabled → active
  keys delete <key>                 active or disabled → deleted (final)
  keys domains <key> [domain ...]   restrict the key to these domains (none: no restriction)`;

const describe = (key: VerificationKey, vault: KeyVault) =>
  [vault.decrypt(key.keyEncrypted), key.status.padEnd(8), key.useDomain ? key.domains.join(',') : '(any domain)', key.createdAt.toISOString()].join('  ');

async function run(args: string[]): Promise<number> {
  const [group, command, target, ...rest] = args;
  if (group !== 'keys' || !command || !target) {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  const config = exitOnConfigError(() => loadConfigSubset(['DATABASE_URL', 'SECRET']));
  const vault = createKeyVault(config.SECRET);
  const orm = await createOrm(config.DATABASE_URL, 2);
  const em = orm.em.fork();
  try {
    switch (command) {
      case 'list': {
        const keys = await listKeys(em, target);
        process.stdout.write(keys.length ? `${keys.map((key) => describe(key, vault)).join('\n')}\n` : `No keys for ${target}.\n`);
        return 0;
      }
      case 'disable':
      case 'enable':
      case 'delete': {
        const status = ({ disable: 'disabled', enable: 'active', delete: 'deleted' } as const)[command];
        process.stdout.write(`${describe(await updateKey(em, vault, target, { status }), vault)}\n`);
        return 0;
      }
      case 'domains': {
        const key = await updateKey(em, vault, target, { domains: parseDomains(rest), useDomain: rest.length > 0 });
        process.stdout.write(`${describe(key, vault)}\n`);
        return 0;
      }
      default:
        process.stderr.write(`${USAGE}\n`);
        return 2;
    }
  } catch (error) {
    if (!(error instanceof KeyRuleError)) throw error;
    process.stderr.write(`${error.message}\n`);
    return 1;
  } finally {
    await orm.close();
  }
}

process.exitCode = await run(process.argv.slice(2));
