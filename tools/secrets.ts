// Writes the secret values an installation runs with, random where this script can choose them,
// into files git ignores, never over an existing one (SECRET must not change once keys exist):
//
//   npm run secrets:compose                        .env beside docker-compose.yml
//   npm run secrets:k8s -- <overlay directory>     the overlay's secret-*.env files
//
// For a Kubernetes overlay with managed services, give their addresses and the credentials only
// their provider knows in the environment (docs/deploying.md, "Secrets"): DATABASE_ADDRESS
// (host:port/database), DATABASE_OWNER and DATABASE_USER (role names), REDIS_ADDRESS (host:port),
// REDIS_TLS=true for rediss://, SMTP_URL, S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY. Unset, they are
// the trial overlay's own services (overlays/small). The database and Redis passwords are made here:
// create the roles and the Redis users with them (the SQL and the ACL lines are in the docs).
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** URL-safe, so that it needs no escaping inside DATABASE_URL or REDIS_URL. */
const random = (bytes = 24) => randomBytes(bytes).toString('hex');

type Files = Record<string, Record<string, string>>;

function write(dir: string, files: Files): void {
  const present = Object.keys(files).filter((name) => existsSync(path.join(dir, name)));
  if (present.length > 0) {
    process.stderr.write(
      `${present.map((name) => path.join(dir, name)).join(', ')} already there: nothing written. ` +
        'This never replaces a secret (SECRET must not change once keys exist); delete the files first only for a new installation.\n',
    );
    process.exit(1);
  }
  for (const [name, values] of Object.entries(files)) {
    const text = Object.entries(values)
      .map(([key, value]) => `${key}=${value}\n`)
      .join('');
    writeFileSync(path.join(dir, name), text, { mode: 0o600 });
    process.stdout.write(`wrote ${path.join(dir, name)} (${Object.keys(values).join(', ')})\n`);
  }
}

/** The compose file's secrets (docker-compose.yml requires each). */
export function composeSecrets(): Files {
  return {
    '.env': {
      POSTGRES_PASSWORD: random(),
      S3_SECRET_ACCESS_KEY: random(),
      SECRET: randomBytes(32).toString('base64'),
      ADMIN_TOKEN: random(),
      SPAM_FILTER_PASSWORD: random(),
    },
  };
}

/** The files a Kubernetes overlay's secretGenerator names, each with only what its component uses. */
export function kubernetesSecrets(kustomization: string, env: NodeJS.ProcessEnv): Files {
  const trial = kustomization.includes('secret-trial-services.env');
  const ownerPassword = env.DATABASE_OWNER_PASSWORD ?? random();
  const userPassword = env.DATABASE_PASSWORD ?? random();
  const redisPassword = env.REDIS_PASSWORD ?? random();
  const kedaPassword = env.KEDA_REDIS_PASSWORD ?? random();
  const s3Key = env.S3_ACCESS_KEY_ID ?? (trial ? 'contactform' : undefined);
  const s3Secret = env.S3_SECRET_ACCESS_KEY ?? (trial ? random() : undefined);
  const smtpUrl = env.SMTP_URL ?? (trial ? 'smtp://mailpit:1025' : undefined);
  const database = env.DATABASE_ADDRESS ?? 'postgres:5432/contact_form';
  const owner = env.DATABASE_OWNER ?? 'contact_form_owner';
  const user = env.DATABASE_USER ?? 'contact_form';
  const redis = env.REDIS_ADDRESS ?? 'redis:6379';
  const scheme = env.REDIS_TLS === 'true' ? 'rediss' : 'redis';
  const missing = [
    ['SMTP_URL', smtpUrl],
    ['S3_ACCESS_KEY_ID', s3Key],
    ['S3_SECRET_ACCESS_KEY', s3Secret],
  ].filter(([, value]) => value === undefined);
  if (missing.length > 0) throw new Error(`set ${missing.map(([name]) => name).join(', ')} in the environment: this overlay's services are yours`);
  const shared = {
    DATABASE_URL: `postgres://${user}:${userPassword}@${database}`,
    REDIS_URL: `${scheme}://:${redisPassword}@${redis}`,
    SECRET: randomBytes(32).toString('base64'),
  };
  const adminToken = random();
  const spamFilterPassword = random();
  const s3 = { S3_ACCESS_KEY_ID: s3Key!, S3_SECRET_ACCESS_KEY: s3Secret! };
  const files: Files = {
    'secret-migrate.env': { DATABASE_URL: `postgres://${owner}:${ownerPassword}@${database}` },
    'secret-api.env': { ...shared, ...s3, ADMIN_TOKEN: adminToken, SPAM_FILTER_PASSWORD: spamFilterPassword },
    'secret-worker.env': { ...shared, ...s3, SMTP_URL: smtpUrl!, ADMIN_TOKEN: adminToken, SPAM_FILTER_PASSWORD: spamFilterPassword },
    'secret-bounces.env': shared,
    'secret-rspamd.env': { SPAM_FILTER_PASSWORD: spamFilterPassword },
    // KEDA reads the queue's length as a Redis user of its own (docs/deploying.md, "KEDA's Redis user").
    'secret-keda-redis.env': {
      address: trial ? `redis.contact-form.svc.cluster.local:6379` : (env.KEDA_REDIS_ADDRESS ?? redis),
      username: 'keda',
      password: kedaPassword,
    },
  };
  if (trial)
    files['secret-trial-services.env'] = {
      POSTGRES_PASSWORD: ownerPassword,
      APP_DATABASE_PASSWORD: userPassword,
      REDIS_PASSWORD: redisPassword,
      KEDA_REDIS_PASSWORD: kedaPassword,
      MINIO_ROOT_USER: s3Key!,
      MINIO_ROOT_PASSWORD: s3Secret!,
    };
  const named = new Set([...kustomization.matchAll(/secret-[a-z-]+\.env/g)].map((match) => match[0]));
  return Object.fromEntries(Object.entries(files).filter(([name]) => named.has(name)));
}

if (import.meta.main) {
  const [target, dir] = process.argv.slice(2);
  if (target === 'compose') {
    write(path.resolve(import.meta.dirname, '..'), composeSecrets());
  } else if (target === 'k8s' && dir) {
    const file = path.join(dir, 'kustomization.yaml');
    if (!existsSync(file)) {
      process.stderr.write(`${file} not found: name an overlay directory, e.g. deploy/kubernetes/overlays/small\n`);
      process.exit(2);
    }
    try {
      write(dir, kubernetesSecrets(readFileSync(file, 'utf8'), process.env));
    } catch (error) {
      process.stderr.write(`${(error as Error).message}\n`);
      process.exit(2);
    }
  } else {
    process.stderr.write('Usage: npm run secrets:compose | npm run secrets:k8s -- <overlay directory>\n');
    process.exit(2);
  }
}
