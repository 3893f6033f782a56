// The configuration, read and validated once at start (the variables are in config-schema.ts).
// A bad value stops the process with a message naming the variable.
import * as v from 'valibot';
import { EnvSchema } from './config-schema.ts';
import { sampleValueIssues } from './sample-values.ts';

export type { TrustProxy } from './config-schema.ts';

type Env = v.InferOutput<typeof EnvSchema>;

/** DATABASE_DIRECT_URL is always set: DATABASE_URL when the environment leaves it unset. */
export type Config = Omit<Env, 'DATABASE_DIRECT_URL'> & { PUBLIC_URL: string; DATABASE_DIRECT_URL: string };

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Rules between variables, checked after each is valid on its own (docs/configuration.md lists them). */
export const CROSS_CHECKS: ReadonlyArray<{ rule: string; holds: (env: Env) => boolean }> = [
  {
    rule: 'DKIM_DOMAIN, DKIM_SELECTOR, DKIM_PRIVATE_KEY: set all three or none',
    holds: (env) => [env.DKIM_DOMAIN, env.DKIM_SELECTOR, env.DKIM_PRIVATE_KEY].filter(Boolean).length % 3 === 0,
  },
  {
    rule: 'REDIS_SENTINELS, REDIS_CLUSTER: set one or the other (a Redis Cluster fails over by itself)',
    holds: (env) => env.REDIS_SENTINELS === undefined || !env.REDIS_CLUSTER,
  },
  {
    rule: 'DATABASE_POOLER, DATABASE_DIRECT_URL: with DATABASE_POOLER=transaction, set DATABASE_DIRECT_URL to PostgreSQL itself (LISTEN and the migration lock need a session of their own, which the pooler does not keep)',
    holds: (env) => env.DATABASE_POOLER !== 'transaction' || env.DATABASE_DIRECT_URL !== undefined,
  },
  {
    rule: 'METRICS_PORT: needs ADMIN_TOKEN (a worker serves its metrics only with that token)',
    holds: (env) => env.METRICS_PORT === undefined || env.ADMIN_TOKEN !== undefined,
  },
  {
    rule: 'HTTP_HEADERS_TIMEOUT_MS: must not exceed HTTP_REQUEST_TIMEOUT_MS',
    holds: (env) => env.HTTP_REQUEST_TIMEOUT_MS === 0 || env.HTTP_HEADERS_TIMEOUT_MS <= env.HTTP_REQUEST_TIMEOUT_MS,
  },
  {
    rule: 'BOUNCE_METRICS_PORT: needs ADMIN_TOKEN (the receiver serves its metrics only with that token)',
    holds: (env) => env.BOUNCE_METRICS_PORT === undefined || env.ADMIN_TOKEN !== undefined,
  },
  {
    rule: 'BOUNCE_TLS_CERT, BOUNCE_TLS_KEY: set both or neither',
    holds: (env) => (env.BOUNCE_TLS_CERT === undefined) === (env.BOUNCE_TLS_KEY === undefined),
  },
  {
    rule: "SPAM_FILTER_URL, SPAM_FILTER_CONTROLLER_URL: set both or neither (the owners' marks are taught at the controller)",
    holds: (env) => (env.SPAM_FILTER_URL === undefined) === (env.SPAM_FILTER_CONTROLLER_URL === undefined),
  },
  {
    rule: 'CLAMD_SOCKET, CLAMD_HOST: one or neither (clamd is reached one way)',
    holds: (env) => env.CLAMD_SOCKET === undefined || env.CLAMD_HOST === undefined,
  },
];

/** Reads and validates the environment; throws a ConfigError naming every bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = parseEnv(EnvSchema, env) as Env;
  const broken = CROSS_CHECKS.find((check) => !check.holds(parsed));
  if (broken) throw new ConfigError(`Invalid configuration:\n  ${broken.rule}`);
  const host = parsed.HOST === '0.0.0.0' || parsed.HOST === '::' ? 'localhost' : parsed.HOST;
  return {
    ...parsed,
    PUBLIC_URL: (parsed.PUBLIC_URL ?? `http://${host}:${parsed.PORT}`).replace(/\/+$/, ''),
    DATABASE_DIRECT_URL: parsed.DATABASE_DIRECT_URL ?? parsed.DATABASE_URL,
  };
}

/** For tools that need a few variables only (the migration CLI needs the database settings alone). */
export function loadConfigSubset<const K extends keyof Env>(names: K[], env: NodeJS.ProcessEnv = process.env): Pick<Env, K> {
  const schema = v.pick(EnvSchema, names as [K, ...K[]]) as unknown as v.GenericSchema<Record<string, string>, unknown>;
  return parseEnv(schema, env) as Pick<Env, K>;
}

function parseEnv(schema: v.GenericSchema<Record<string, string>, unknown>, env: NodeJS.ProcessEnv): unknown {
  // Treat empty strings as unset, as shells and compose files often export them.
  const present = Object.fromEntries(Object.entries(env).filter(([name, value]) => name in EnvSchema.entries && value !== undefined && value !== ''));
  const result = v.safeParse(schema, present);
  if (!result.success) {
    const lines = result.issues.map((issue) => {
      const name = issue.path?.map((item) => String(item.key)).join('.') ?? '(environment)';
      const reason = issue.kind === 'schema' && issue.received === 'undefined' ? 'is required' : issue.message;
      return `  ${name}: ${reason}`;
    });
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  // A secret everyone can read in this repository protects nothing.
  const samples = sampleValueIssues(result.output as Record<string, unknown>);
  if (samples.length > 0) throw new ConfigError(`Invalid configuration:\n${samples.map((line) => `  ${line}`).join('\n')}`);
  return result.output;
}

/** For process entry points: a bad configuration ends the process with the message, not a stack trace. */
export function loadConfigOrExit(env: NodeJS.ProcessEnv = process.env): Config {
  return exitOnConfigError(() => loadConfig(env));
}

export function exitOnConfigError<T>(load: () => T): T {
  try {
    return load();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(78); // EX_CONFIG
    }
    throw error;
  }
}

/** `exitOnConfigError` for a process's start, which may also find its configuration wrong (a SECRET the data was not written with). */
export async function exitOnConfigErrorAsync<T>(start: () => Promise<T>): Promise<T> {
  try {
    return await start();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(78); // EX_CONFIG
    }
    throw error;
  }
}
