// The alert rules (deploy/prometheus/rules.yml), their copy for the Prometheus Operator
// (deploy/kubernetes/base/prometheus-rules.yaml) and the Grafana dashboard (deploy/grafana/), held
// against Prometheus's own parser (promtool, from Debian's `prometheus` package, found or installed
// by the global setup) and against the metrics the API, a worker and the bounce receiver really
// serve: a renamed metric, or an alert on one that was never exported, fails here instead of never firing.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { freePort } from '../../src/local/services.ts';
import { startHarness, type Harness } from '../support/harness.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const RULES_FILE = path.join(ROOT, 'deploy/prometheus/rules.yml');
const OPERATOR_RULES_FILE = path.join(ROOT, 'deploy/kubernetes/base/prometheus-rules.yaml');
const DASHBOARD_FILE = path.join(ROOT, 'deploy/grafana/contact-form-service.json');
const TOKEN = 'monitoring-files-admin-token';
/** Series Prometheus makes itself for every scrape target, which no process serves. */
const SCRAPE_SERIES = new Set(['up']);

type Rule = { alert?: string; record?: string; expr: string };
type RuleGroups = { groups: Array<{ name: string; rules: Rule[] }> };
type Panel = { title: string; type: string; targets?: Array<{ expr: string }>; panels?: Panel[] };

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'cfs-monitoring-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function promtool(args: string[]): Promise<{ code: number; output: string }> {
  const found = inject('testTools').promtool!;
  if (found.problem !== undefined) throw new Error(found.problem);
  return new Promise((resolve, reject) => {
    execFile(found.path, args, { timeout: 60_000 }, (error, stdout, stderr) => {
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- an ExecFileException is an Error; its Omit<> type hides that from the rule
      if (error && typeof error.code !== 'number') return reject(error);
      resolve({ code: error ? Number(error.code) : 0, output: `${stdout}${stderr}` });
    });
  });
}

const readRules = async (): Promise<RuleGroups> => parse(await readFile(RULES_FILE, 'utf8')) as RuleGroups;
const readOperatorRules = async () => parse(await readFile(OPERATOR_RULES_FILE, 'utf8')) as { kind: string; spec: RuleGroups };

async function dashboardExpressions(): Promise<Array<{ panel: string; expr: string }>> {
  const dashboard = JSON.parse(await readFile(DASHBOARD_FILE, 'utf8')) as { panels: Panel[] };
  const panels = dashboard.panels.flatMap((panel) => [panel, ...(panel.panels ?? [])]);
  return panels.flatMap((panel) => (panel.targets ?? []).map((target) => ({ panel: panel.title, expr: target.expr })));
}

const PROMQL_WORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'and', 'or', 'unless', 'bool', 'offset', 'inf', 'nan']);

/**
 * The metric names a PromQL expression reads: its identifiers outside strings, less functions and
 * aggregations (followed by `(`), label names (in a matcher, or in `by`/`without`/`on`/`ignoring`
 * lists) and keywords.
 */
function metricNames(expr: string): string[] {
  const code = expr.replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""');
  const names = new Set<string>();
  for (const match of code.matchAll(/(?<![\w:.])([a-zA-Z_:][\w:]*)/g)) {
    const name = match[1]!;
    const after = code.slice(match.index + name.length).trimStart();
    const before = code.slice(0, match.index);
    if (PROMQL_WORDS.has(name.toLowerCase()) || after.startsWith('(') || /^(by|without)\s*\(/i.test(after)) continue; // a function or an aggregation
    if (/^(=~|!~|!=|=(?!=))/.test(after)) continue; // a label matcher
    if (/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*$/i.test(before)) continue; // a grouping list
    names.add(name);
  }
  return [...names];
}

/** The metric names an exposition lists (`# TYPE` lines), with a histogram's and a summary's series names. */
function exposedNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    names.add(name!);
    if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(`${name}${suffix}`);
    if (type === 'summary') for (const suffix of ['_sum', '_count']) names.add(`${name}${suffix}`);
  }
  return names;
}

describe('the alert rules', () => {
  it('pass promtool check rules', async () => {
    const result = await promtool(['check', 'rules', RULES_FILE]);
    expect(result.output).toMatch(/SUCCESS: \d+ rules found/);
    expect(result.code, result.output).toBe(0);
    // A broken one is refused, so the pass above means something.
    const broken = path.join(dir, 'broken.yml');
    await writeFile(broken, stringify({ groups: [{ name: 'broken', rules: [{ alert: 'Broken', expr: 'sum(rate(cfs_deliveries_total[5m])' }] }] }));
    expect((await promtool(['check', 'rules', broken])).code).not.toBe(0);
  });

  it('are the same in the PrometheusRule of the Kubernetes base, which promtool passes too', async () => {
    const operator = await readOperatorRules();
    expect(operator.kind).toBe('PrometheusRule');
    expect(operator.spec).toEqual(await readRules());
    const extracted = path.join(dir, 'operator-rules.yml');
    await writeFile(extracted, stringify(operator.spec));
    const result = await promtool(['check', 'rules', extracted]);
    expect(result.code, result.output).toBe(0);
  });
});

describe('FileScannerDown', () => {
  it('fires after 5 minutes of deliveries waiting for clamd, or once files went out unscanned, and not for files scanned', async () => {
    const rule = (await readRules()).groups.flatMap((group) => group.rules).find((candidate) => candidate.alert === 'FileScannerDown');
    expect(rule, 'deploy/prometheus/rules.yml has FileScannerDown').toBeDefined();
    const { labels, annotations } = rule as Rule & { labels: Record<string, string>; annotations: Record<string, string> };
    const fired = [{ exp_labels: labels, exp_annotations: annotations }];
    // promtool's unit tests: series given minute by minute, the alert's state asked at given times.
    const cases = [
      // One worker holds deliveries back from minute 1: pending for 5 minutes, then firing.
      { series: [{ series: 'cfs_file_scanner_waiting{instance="worker-1"}', values: '0 1+0x12' }], quietAt: '5m', firingAt: '7m' },
      // A file went out unscanned at minute 2.
      { series: [{ series: 'cfs_file_scans_total{instance="worker-1",outcome="unscanned"}', values: '0 0 1+0x12' }], quietAt: '6m', firingAt: '8m' },
      // Files scanned, none waiting: never.
      {
        series: [
          { series: 'cfs_file_scans_total{instance="worker-1",outcome="clean"}', values: '0+5x14' },
          { series: 'cfs_file_scanner_waiting{instance="worker-1"}', values: '0+0x14' },
        ],
        quietAt: '12m',
      },
    ];
    const tests = cases.map(({ series, quietAt, firingAt }) => ({
      interval: '1m',
      input_series: series,
      alert_rule_test: [
        { eval_time: quietAt, alertname: 'FileScannerDown', exp_alerts: [] },
        ...(firingAt ? [{ eval_time: firingAt, alertname: 'FileScannerDown', exp_alerts: fired }] : []),
      ],
    }));
    const file = path.join(dir, 'file-scanner-down.test.yml');
    await writeFile(file, stringify({ rule_files: [RULES_FILE], evaluation_interval: '1m', tests }));
    const result = await promtool(['test', 'rules', file]);
    expect(result.code, result.output).toBe(0);
    expect(result.output).toContain('SUCCESS');
  });
});

describe('the Grafana dashboard', () => {
  it('has a panel for intake, both queues, deliveries by kind, the SMTP breaker, spam verdicts, bounces and file scans, each query valid PromQL', async () => {
    const expressions = await dashboardExpressions();
    const read = new Set(expressions.flatMap(({ expr }) => metricNames(expr)));
    for (const metric of [
      'cfs_http_request_duration_seconds_count',
      'cfs_submissions_accepted_total',
      'cfs_submissions_rejected_total',
      'cfs_queue_jobs',
      'cfs_webhook_queue_jobs',
      'cfs_deliveries_total',
      'cfs_smtp_breaker_open',
      'cfs_spam_checks_total',
      'cfs_bounces_total',
      'cfs_file_scans_total',
    ])
      expect(read, metric).toContain(metric);
    // promtool parses PromQL in rule files only: each query becomes a recording rule.
    const asRules = path.join(dir, 'dashboard-queries.yml');
    await writeFile(
      asRules,
      stringify({ groups: [{ name: 'dashboard', rules: expressions.map(({ expr }, i) => ({ record: `dashboard:query_${i}`, expr })) }] }),
    );
    const result = await promtool(['check', 'rules', asRules]);
    expect(result.code, result.output).toBe(0);
  });
});

describe('every metric the rules and the dashboard read', () => {
  let h: Harness | undefined;
  afterAll(() => h?.stop());

  it('is found in an expression: names, not functions, aggregations, label names or keywords', () => {
    // A name the parser misses would pass unchecked.
    expect(metricNames('histogram_quantile(0.95, sum by (le) (rate(cfs_x_bucket{kind="a", state=~"b"}[15m:1m]))) > 3 and count without (x) (up) == 0')).toEqual(
      ['cfs_x_bucket', 'up'],
    );
  });

  it('is served by the API, a worker or the bounce receiver', async () => {
    const workerPort = await freePort();
    h = await startHarness({ env: { ADMIN_TOKEN: TOKEN, METRICS_PORT: String(workerPort), BOUNCE_DOMAIN: 'bounces.example.test', BOUNCE_METRICS_PORT: '0' } });
    const bounces = await h.startBounces();
    const headers = { authorization: `Bearer ${TOKEN}` };
    const served = new Set<string>();
    for (const url of [`${h.url}/metrics`, `http://127.0.0.1:${workerPort}/metrics`, `http://127.0.0.1:${bounces.metricsPort}/metrics`]) {
      const response = await fetch(url, { headers });
      expect(response.status, url).toBe(200);
      for (const name of exposedNames(await response.text())) served.add(name);
    }

    const read = [
      ...(await readRules()).groups.flatMap((group) => group.rules.map((rule) => ({ where: `alert ${rule.alert ?? rule.record}`, expr: rule.expr }))),
      ...(await dashboardExpressions()).map(({ panel, expr }) => ({ where: `panel "${panel}"`, expr })),
    ];
    const unknown = read.flatMap(({ where, expr }) =>
      metricNames(expr)
        .filter((name) => !served.has(name) && !SCRAPE_SERIES.has(name))
        .map((name) => `${where}: ${name}`),
    );
    expect(unknown).toEqual([]);
  });
});
