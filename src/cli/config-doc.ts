// `npm run docs:config`: writes docs/configuration.md from the configuration schema, so the page
// says exactly what the processes accept. test/unit/docs.test.ts fails when the page and the schema differ.
import { writeFileSync } from 'node:fs';
import * as v from 'valibot';
import { CROSS_CHECKS } from '../shared/infra/config.ts';
import { SETTING_GROUPS } from '../shared/infra/config-schema.ts';

export const CONFIGURATION_DOC = new URL('../../docs/configuration.md', import.meta.url);

/** Variables read outside the schema: by npm start's children, by the tests, or by Node itself. */
export const OTHER_VARIABLES: ReadonlyArray<{ name: string; readBy: string; description: string }> = [
  {
    name: 'NODE_COMPILE_CACHE',
    readBy: 'API and worker processes',
    description: "Where Node's compile cache lives. Unset: `node_modules/.cache/node-compile-cache`.",
  },
  {
    name: 'CFS_EXIT_WITH_PARENT',
    readBy: 'API and worker processes',
    description: '`npm start` sets it to `1` for the processes it starts, so that they stop when it dies. Not for operators.',
  },
  {
    name: 'CHROMIUM_PATH',
    readBy: '`npm test`',
    description: 'The Chromium the browser tests drive. Unset: `chromium` on `PATH` (installed by apt when missing, as root).',
  },
  {
    name: 'DOCKER_COMPOSE',
    readBy: '`npm test`',
    description: 'The `docker-compose` that validates docker-compose.yml. Unset: found on `PATH`, installed the same way.',
  },
  {
    name: 'RSPAMD_PATH',
    readBy: '`npm start`, `npm test`',
    description: 'The `rspamd` that `npm start` and the spam filter tests run. Unset: `rspamd` on `PATH`, installed the same way.',
  },
  {
    name: 'CLAMD_PATH',
    readBy: '`npm start`, `npm test`',
    description:
      'The `clamd` that `npm start` and the file scanning tests run. Unset: `clamd` on `PATH`; the tests install it the same way (package `clamav-daemon`, its system services stopped), `npm start` never does.',
  },
  {
    name: 'CLAMD_DATABASE_DIR',
    readBy: '`npm start`',
    description:
      "The signature database of the clamd that `npm start` runs when neither `CLAMD_SOCKET` nor `CLAMD_HOST` (with `CLAMD_PORT`) names one (docs/operations.md#scanning-uploaded-files). Unset: `/var/lib/clamav`, where Debian's freshclam keeps it.",
  },
  {
    name: 'XDG_CACHE_HOME',
    readBy: '`npm start`, `npm test`',
    description: "Where a local rspamd's compiled rules are cached for a user other than root (root: /var/lib/contact-form-service). Unset: `~/.cache`.",
  },
  {
    name: 'INIT_CWD',
    readBy: '`npm run backup`, `npm run restore`',
    description: 'Set by npm to the directory it was run in: a relative archive path is taken from there. Not for operators.',
  },
  {
    name: 'POSTFIX_PATH',
    readBy: '`npm test`',
    description:
      'The `postfix` of the bounce tests against a real relay (they start their own instance; root only). Unset: `postfix` on `PATH`, installed the same way.',
  },
  {
    name: 'HAPROXY_PATH',
    readBy: '`npm test`',
    description: 'The `haproxy` of the load balancer test (three API processes behind it). Unset: `haproxy` on `PATH`, installed the same way.',
  },
  {
    name: 'PGBOUNCER_PATH',
    readBy: '`npm test`',
    description:
      'The `pgbouncer` of the connection pooler test (the API, the workers and the bounce receiver through it in transaction mode). Unset: `pgbouncer` on `PATH`, installed the same way, its system service stopped.',
  },
  {
    name: 'KUBECTL_PATH',
    readBy: '`npm test`',
    description:
      "The `kubectl` (1.27 or later) that renders the Kubernetes manifests for their check. Unset: `kubectl` on `PATH`, installed the same way (Debian 12's is too old).",
  },
  {
    name: 'PROMTOOL_PATH',
    readBy: '`npm test`',
    description:
      "The `promtool` that checks the alert rules and the dashboard's queries (deploy/prometheus, deploy/grafana). Unset: `promtool` on `PATH`, installed the same way (package `prometheus`), its system service stopped.",
  },
];

const UNITS: Array<[suffix: string, toMs: number]> = [
  ['_MS', 1],
  ['_SECONDS', 1_000],
];

/** 432000000 for a *_MS variable reads better as "5 days" beside it. */
function readable(name: string, value: string): string {
  const unit = UNITS.find(([suffix]) => name.endsWith(suffix));
  const number = Number(value);
  if (!unit || !Number.isFinite(number) || number * unit[1] < 1_000) return '';
  const ms = number * unit[1];
  const sizes: Array<[ms: number, label: string]> = [
    [86_400_000, ' days'],
    [3_600_000, ' h'],
    [60_000, ' min'],
    [1_000, ' s'],
  ];
  const [size, label] = sizes.find(([each]) => ms % each === 0) ?? [];
  if (!size) return '';
  return ` (${ms / size}${ms === 86_400_000 ? ' day' : label})`;
}

type Setting = v.GenericSchema & { type: string; default?: unknown; wrapped?: Setting };

function typeOf(schema: Setting): string {
  const type = (v.getMetadata(schema) as { type?: string }).type;
  if (type) return type;
  return schema.wrapped ? typeOf(schema.wrapped) : 'text';
}

function defaultOf(name: string, schema: Setting): string {
  if (schema.type !== 'optional') return 'required';
  const fallback = v.getDefault(schema as never) as string | undefined;
  if (fallback === undefined) return 'unset';
  return fallback === '' ? 'unset' : `\`${fallback}\`${readable(name, fallback)}`;
}

const cell = (text: string) => text.replaceAll('|', '\\|');

export function renderConfigurationDoc(): string {
  const lines = [
    '# Configuration',
    '',
    'Every setting of the API and worker processes, with its type and default. Each process reads its',
    'environment once at start and validates it; a bad value stops the process with exit code 78 and a',
    'message that names the variable. An empty value counts as unset.',
    '',
    '`npm start` needs none of them: it starts local services for the ones that name a service and keeps',
    'a generated `SECRET` in `DATA_DIR/secret`. In production set at least `DATABASE_URL`, `REDIS_URL`,',
    '`SMTP_URL`, `SECRET`, `PUBLIC_URL`, `MAIL_FROM` and the `S3_*` settings (see',
    '[deploying.md](deploying.md)).',
    '',
    'This page is generated from `src/shared/infra/config-schema.ts` by `npm run docs:config`; `npm test` fails',
    'when the two differ.',
  ];
  for (const [group, settings] of Object.entries(SETTING_GROUPS)) {
    lines.push('', `## ${group}`, '', '| Variable | Type | Default | Description |', '| --- | --- | --- | --- |');
    for (const [name, schema] of Object.entries(settings)) {
      const setting = schema as unknown as Setting;
      const description = v.getDescription(setting) ?? '';
      lines.push(`| \`${name}\` | ${cell(typeOf(setting))} | ${cell(defaultOf(name, setting))} | ${cell(description)} |`);
    }
  }
  lines.push('', '## Rules between variables', '');
  for (const check of CROSS_CHECKS) lines.push(`- ${check.rule.replace(/\b[A-Z][A-Z0-9_]{2,}\b/g, '`$&`')}.`);
  lines.push('', '## Read outside the schema', '', '| Variable | Read by | Description |', '| --- | --- | --- |');
  for (const other of OTHER_VARIABLES) lines.push(`| \`${other.name}\` | ${other.readBy} | ${cell(other.description)} |`);
  return `${lines.join('\n')}\n`;
}

if (import.meta.main) {
  writeFileSync(CONFIGURATION_DOC, renderConfigurationDoc());
  process.stdout.write(`Wrote ${CONFIGURATION_DOC.pathname}\n`);
}
