// docker-compose.yml, checked without a Docker engine: Debian's docker-compose 1.29 validates and
// resolves the file (anchors, ${VAR:-default} substitution), and the resolved services must agree
// with each other and with the config schema the processes validate at start. The Dockerfile is
// read in test/unit/deploy/dockerfile.test.ts.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parse } from 'yaml';
import { loadConfig } from '../src/shared/infra/config.ts';
import { composeSecrets } from '../tools/secrets.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const COMPOSE_FILE = path.join(ROOT, 'docker-compose.yml');
const APP_SERVICES = ['migrate', 'api', 'worker', 'bounces'] as const;

type Service = {
  image?: string;
  build?: unknown;
  command?: string[] | string;
  entrypoint?: string[] | string;
  environment?: Record<string, string | number | boolean | null>;
  ports?: unknown[];
  container_name?: string;
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test?: string[] | string; disable?: boolean };
  profiles?: string[];
};
type ComposeConfig = { services: Record<string, Service> };
type Run = { code: number; stdout: string; stderr: string };

let dir: string;
let emptyEnvFile: string;
let secretsEnvFile: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'cfs-compose-'));
  emptyEnvFile = path.join(dir, 'empty.env');
  await writeFile(emptyEnvFile, '');
  // The .env `npm run secrets:compose` writes: the file has no default for a secret.
  secretsEnvFile = path.join(dir, 'secrets.env');
  await writeFile(
    secretsEnvFile,
    Object.entries(composeSecrets()['.env']!)
      .map(([key, value]) => `${key}=${value}\n`)
      .join(''),
  );
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/**
 * Runs docker-compose on a file with a bare environment and an env file of generated secrets (as
 * `npm run secrets:compose` writes), so neither the shell (DATABASE_URL, S3_* set by a developer or
 * CI) nor a local .env changes what the defaults resolve to.
 */
function dockerCompose(file: string, ...args: string[]): Promise<Run> {
  return dockerComposeWith(secretsEnvFile, file, ...args);
}

function dockerComposeWith(envFile: string, file: string, ...args: string[]): Promise<Run> {
  // Found or installed by the global setup (DOCKER_COMPOSE, else docker-compose on PATH).
  const found = inject('testTools')['docker-compose']!;
  if (found.problem !== undefined) return Promise.reject(new Error(found.problem));
  return new Promise((resolve, reject) => {
    execFile(
      found.path,
      ['--env-file', envFile, '-f', file, ...args],
      { cwd: path.dirname(file), env: { PATH: process.env.PATH ?? '/usr/bin:/bin' }, timeout: 30_000 },
      (error, stdout, stderr) => {
        // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- an ExecFileException is an Error; its Omit<> type hides that from the rule
        if (error && typeof error.code !== 'number') return reject(error); // not found, killed, ...
        resolve({ code: error ? Number(error.code) : 0, stdout, stderr });
      },
    );
  });
}

let resolved: Promise<ComposeConfig> | undefined;

/** The file as docker-compose resolves it (anchors merged, variables substituted); run once per file. */
function resolvedCompose(): Promise<ComposeConfig> {
  resolved ??= resolveCompose();
  return resolved;
}

async function resolveCompose(): Promise<ComposeConfig> {
  const run = await dockerCompose(COMPOSE_FILE, 'config');
  expect(run.stderr).toBe('');
  expect(run.code).toBe(0);
  return parse(run.stdout) as ComposeConfig;
}

function service(config: ComposeConfig, name: string): Service {
  const found = config.services[name];
  if (!found) throw new Error(`docker-compose.yml has no service ${name}`);
  return found;
}

function environment(svc: Service): Record<string, string> {
  return Object.fromEntries(Object.entries(svc.environment ?? {}).map(([name, value]) => [name, String(value ?? '')]));
}

function words(value: string[] | string | undefined): string {
  return Array.isArray(value) ? value.join(' ') : (value ?? '');
}

/** Expands the shell variables ($$VAR in compose, $VAR or ${VAR} in the shell) of a one-shot's command. */
function expandShell(command: string, env: Record<string, string>): string {
  return command.replace(/\$?\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?/g, (_, name: string) => {
    if (!(name in env)) throw new Error(`command uses ${name}, which its environment does not set`);
    return env[name]!;
  });
}

describe('docker-compose.yml', () => {
  it('refuses to resolve without the secrets, naming one and the command that writes them', async () => {
    const run = await dockerComposeWith(emptyEnvFile, COMPOSE_FILE, 'config', '-q');
    expect(run.code).not.toBe(0);
    expect(run.stderr).toMatch(/(POSTGRES_PASSWORD|S3_SECRET_ACCESS_KEY|ADMIN_TOKEN|SECRET|SPAM_FILTER_PASSWORD)[^]*npm run secrets:compose/);
  });

  it('is a valid compose file (docker-compose config -q)', async () => {
    const run = await dockerCompose(COMPOSE_FILE, 'config', '-q');
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
  });

  it('gives the API, the workers and the migration CLI one environment that the config schema accepts', async () => {
    const config = await resolvedCompose();
    const [first, ...rest] = APP_SERVICES.map((name) => environment(service(config, name)));
    for (const other of rest) expect(other).toEqual(first);

    const env = first!;
    // Throws a ConfigError naming each bad variable.
    const parsed = loadConfig(env) as Record<string, unknown>;
    // loadConfig keeps only the variables its schema names: one missing from its output is a typo or unknown.
    for (const [name, value] of Object.entries(env)) {
      expect(value, name).not.toBe('');
      expect(parsed, `${name} is not a variable of src/shared/infra/config.ts`).toHaveProperty(name);
    }
    for (const name of [
      'DATABASE_URL',
      'REDIS_URL',
      'S3_ENDPOINT',
      'S3_BUCKET',
      'S3_ACCESS_KEY_ID',
      'S3_SECRET_ACCESS_KEY',
      'SMTP_URL',
      'ADMIN_TOKEN',
      'PUBLIC_URL',
    ]) {
      expect(env, name).toHaveProperty(name);
    }
    expect(parsed).toMatchObject({ PORT: 3000, HOST: '0.0.0.0', S3_FORCE_PATH_STYLE: true, PUBLIC_URL: 'http://localhost:3000' });
  });

  it('points the services at the compose services, with the credentials those were given', async () => {
    const config = await resolvedCompose();
    const env = environment(service(config, 'api'));

    const database = new URL(env.DATABASE_URL!);
    const postgres = environment(service(config, 'postgres'));
    expect(database.hostname).toBe('postgres');
    expect(decodeURIComponent(database.username)).toBe(postgres.POSTGRES_USER);
    expect(decodeURIComponent(database.password)).toBe(postgres.POSTGRES_PASSWORD);
    expect(database.pathname).toBe(`/${postgres.POSTGRES_DB}`);

    expect(new URL(env.REDIS_URL!).hostname).toBe('redis');
    expect(new URL(env.SMTP_URL!)).toMatchObject({ hostname: 'mailpit', port: '1025' });
    expect(new URL(env.S3_ENDPOINT!)).toMatchObject({ hostname: 'minio', port: '9000' });

    const minio = environment(service(config, 'minio'));
    expect(env.S3_ACCESS_KEY_ID).toBe(minio.MINIO_ROOT_USER);
    expect(env.S3_SECRET_ACCESS_KEY).toBe(minio.MINIO_ROOT_PASSWORD);
    expect(minio.MINIO_ROOT_PASSWORD!.length).toBeGreaterThanOrEqual(8); // MinIO refuses shorter ones
    expect(words(service(config, 'minio').command)).toBe('server /data --console-address :9001');
  });

  it('creates the configured bucket in MinIO with its root credentials before the API and the workers start', async () => {
    const config = await resolvedCompose();
    const env = environment(service(config, 'api'));
    const init = service(config, 'minio-init');
    const script = expandShell(words(init.command), environment(init));
    expect(script).toContain(`mc alias set local http://minio:9000 "${env.S3_ACCESS_KEY_ID}" "${env.S3_SECRET_ACCESS_KEY}"`);
    expect(script).toContain(`mc mb --ignore-existing "local/${env.S3_BUCKET}"`);
    expect(init.depends_on?.minio).toEqual({ condition: 'service_healthy' });
  });

  it('orders the start: migrations, then the API and the workers', async () => {
    const config = await resolvedCompose();
    expect(service(config, 'migrate').depends_on).toEqual({ postgres: { condition: 'service_healthy' } });
    for (const name of ['api', 'worker']) {
      expect(service(config, name).depends_on, name).toMatchObject({
        migrate: { condition: 'service_completed_successfully' },
        redis: { condition: 'service_healthy' },
        'minio-init': { condition: 'service_completed_successfully' },
      });
    }
    expect(words(service(config, 'migrate').command)).toBe('node src/cli/migrate.ts');
    expect(words(service(config, 'api').command)).toBe('node --import=./src/shared/infra/compile-cache.mjs src/api/main.ts');
    expect(words(service(config, 'worker').command)).toBe('node --import=./src/shared/infra/compile-cache.mjs --max-semi-space-size=4 src/workers/main.ts');
  });

  it('lets the worker scale: no host ports, no container name, no HTTP health check', async () => {
    const config = await resolvedCompose();
    const worker = service(config, 'worker');
    expect(worker.ports).toBeUndefined();
    expect(worker.container_name).toBeUndefined();
    // The image's HEALTHCHECK probes the API's /healthz; the worker and migrate serve no HTTP.
    expect(worker.healthcheck?.test).toEqual(['NONE']);
    expect(service(config, 'migrate').healthcheck?.test).toEqual(['NONE']);
    for (const [name, svc] of Object.entries(config.services)) expect(svc.container_name, name).toBeUndefined();
    expect(service(config, 'api').ports).toEqual([{ published: 3000, target: 3000 }]);
  });

  it('runs the bounce receiver on port 25 only with the bounces profile, after the migrations', async () => {
    const config = await resolvedCompose();
    const bounces = service(config, 'bounces');
    expect(bounces.profiles).toEqual(['bounces']);
    expect(words(bounces.command)).toBe('node --import=./src/shared/infra/compile-cache.mjs src/bounces/main.ts');
    expect(bounces.ports).toEqual([{ published: 25, target: 25 }]);
    expect(bounces.depends_on).toMatchObject({ migrate: { condition: 'service_completed_successfully' }, redis: { condition: 'service_healthy' } });
    // It listens where the schema's default says: 0.0.0.0:25.
    expect(loadConfig({ ...environment(bounces), BOUNCE_DOMAIN: 'bounces.example.com' })).toMatchObject({ BOUNCE_SMTP_HOST: '0.0.0.0', BOUNCE_SMTP_PORT: 25 });
  });

  it('scans uploaded files with the clamav service: the workers reach its clamd, its signatures are kept on a volume, its health is checked', async () => {
    const config = await resolvedCompose();
    const env = environment(service(config, 'worker'));
    expect(env.CLAMD_HOST).toBe('clamav');
    // The port the official image's clamd listens on (TCPSocket 3310).
    expect(env.CLAMD_PORT).toBe('3310');
    expect(loadConfig(env)).toMatchObject({ CLAMD_HOST: 'clamav', CLAMD_PORT: 3310 });
    const clamav = service(config, 'clamav') as Service & { volumes?: string[] };
    expect(clamav.image).toMatch(/^clamav\/clamav:\d+\.\d+\.\d+$/);
    expect(clamav.ports).toBeUndefined();
    // A named volume where the image's freshclam keeps the database, so a restart does not fetch it all again.
    expect(clamav.volumes).toEqual(['clamav-db:/var/lib/clamav:rw']);
    expect(Object.keys((config as ComposeConfig & { volumes?: object }).volumes ?? {})).toContain('clamav-db');
    expect(clamav.healthcheck?.test).toEqual(['CMD', 'clamdcheck.sh']);
  });

  it('runs Redis with persistence and without eviction, as BullMQ needs', async () => {
    const config = await resolvedCompose();
    const command = words(service(config, 'redis').command);
    expect(command).toContain('--appendonly yes');
    expect(command).toContain('--maxmemory-policy noeviction');
  });
});

describe('the docker-compose check', () => {
  it('fails on a broken copy of docker-compose.yml (ports not a list)', async () => {
    const original = await readFile(COMPOSE_FILE, 'utf8');
    const marker = '  worker:\n    <<: *app\n';
    expect(original).toContain(marker);
    const file = path.join(dir, 'broken-ports.yml');
    await writeFile(file, original.replace(marker, `${marker}    ports: "not-a-list"\n`));
    const run = await dockerCompose(file, 'config', '-q');
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain('ports');
  });

  it('fails on a file that is not valid YAML (bad indentation)', async () => {
    const file = path.join(dir, 'broken-indent.yml');
    await writeFile(file, 'services:\n  api:\n    image: node:24\n   ports:\n     - "3000:3000"\n');
    const run = await dockerCompose(file, 'config', '-q');
    expect(run.code).not.toBe(0);
  });

  it('fails when a service depends on one that does not exist', async () => {
    const original = await readFile(COMPOSE_FILE, 'utf8');
    const file = path.join(dir, 'broken-depends.yml');
    await writeFile(file, original.replaceAll('minio-init:\n        condition', 'minio-setup:\n        condition'));
    const run = await dockerCompose(file, 'config', '-q');
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain('minio-setup');
  });
});
