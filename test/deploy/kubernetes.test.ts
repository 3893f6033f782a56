// The Kubernetes manifests (deploy/kubernetes), checked without a cluster: `kubectl kustomize`
// renders each overlay, every object validates against the Kubernetes and KEDA schemas, and the
// rendered objects are held against the code: each container runs an npm script's command, sets
// only variables the config schema knows (with values it accepts), and is probed on a port and a
// path the process serves; stopping pods outlast the processes' drain; the workers scale on the
// Redis list where BullMQ keeps the email queue's waiting jobs; only the API and the bounce
// receiver take traffic from anywhere.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { loadConfig, loadConfigSubset } from '../../src/shared/infra/config.ts';
import { EnvSchema } from '../../src/shared/infra/config-schema.ts';
import { DELIVERY_QUEUE, WEBHOOK_QUEUE } from '../../src/shared/infra/queues/jobs.ts';
import { PUBLISHED_SAMPLE_VALUES } from '../../src/shared/infra/sample-values.ts';
import { kubernetesSecrets } from '../../tools/secrets.ts';
import { submitJson } from '../support/client.ts';
import { startHarness, type Harness } from '../support/harness.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const KUSTOMIZE_ROOT = path.join(ROOT, 'deploy/kubernetes');
const OVERLAYS = ['small', 'large'] as const;
type Overlay = (typeof OVERLAYS)[number];

/** The image the Dockerfile builds, and rspamd's (rspamd/Dockerfile), by repository name. */
const APP_IMAGE = 'contact-form-service';
const RSPAMD_IMAGE = 'contact-form-rspamd';
/** A process gives itself this long past SHUTDOWN_TIMEOUT_MS before it exits (src/shared/infra/shutdown.ts). */
const SHUTDOWN_MARGIN_S = 5;

type Labels = Record<string, string>;
type Selector = { matchLabels?: Labels; matchExpressions?: Array<{ key: string; operator: string; values?: string[] }> };
type PortRef = number | string;
type Probe = { httpGet?: { path: string; port: PortRef }; tcpSocket?: { port: PortRef }; exec?: { command: string[] } };
type EnvVar = {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string }; configMapKeyRef?: { name: string; key: string } };
};
type Container = {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  env?: EnvVar[];
  envFrom?: Array<{ prefix?: string; configMapRef?: { name: string }; secretRef?: { name: string } }>;
  ports?: Array<{ name?: string; containerPort: number; hostPort?: number }>;
  startupProbe?: Probe;
  readinessProbe?: Probe;
  livenessProbe?: Probe;
  lifecycle?: { preStop?: { exec?: { command: string[] }; sleep?: { seconds: number } } };
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: {
    allowPrivilegeEscalation?: boolean;
    readOnlyRootFilesystem?: boolean;
    privileged?: boolean;
    capabilities?: { drop?: string[]; add?: string[] };
  };
  volumeMounts?: Array<{ name: string; mountPath: string }>;
};
type PodSpec = {
  containers: Container[];
  initContainers?: Container[];
  volumes?: Array<{ name: string; emptyDir?: object; persistentVolumeClaim?: object }>;
  terminationGracePeriodSeconds?: number;
  automountServiceAccountToken?: boolean;
  enableServiceLinks?: boolean;
  hostNetwork?: boolean;
  securityContext?: { runAsNonRoot?: boolean; runAsUser?: number; seccompProfile?: { type: string } };
};
type PodTemplate = { metadata?: { labels?: Labels }; spec: PodSpec };
type K8sObject = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Labels; annotations?: Record<string, string> };
  // Read where the kind is known; the schemas check its shape.
  spec?: any;
  data?: Record<string, string>;
  stringData?: Record<string, string>;
};
type Workload = Omit<K8sObject, 'spec'> & {
  spec: { replicas?: number; selector: Selector; template: PodTemplate; volumeClaimTemplates?: Array<{ metadata: { name: string } }> };
};
type Run = { code: number; stdout: string; stderr: string };

// ---- kubectl ----

function run(file: string, args: string[]): Promise<Run> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { cwd: ROOT, timeout: 60_000, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- an ExecFileException is an Error; its Omit<> type hides that from the rule
      if (error && typeof error.code !== 'number') return reject(error); // not found, killed, ...
      resolve({ code: error ? Number(error.code) : 0, stdout, stderr });
    });
  });
}

/**
 * kubectl, found or installed by the global setup (KUBECTL_PATH, else kubectl on PATH), with a
 * kustomize new enough for the kustomizations (5: `labels`, `patches`); otherwise an error that
 * says how to get one.
 */
async function usableKubectl(found: { path?: string; problem?: string }): Promise<string> {
  if (found.problem !== undefined || found.path === undefined) throw new Error(found.problem ?? 'kubectl was not looked for');
  const version = await run(found.path, ['version', '--client', '-o', 'json']);
  let kustomize: string | undefined;
  try {
    kustomize = (JSON.parse(version.stdout) as { kustomizeVersion?: string }).kustomizeVersion;
  } catch {
    kustomize = undefined;
  }
  const major = /^v(\d+)\./.exec(kustomize ?? '');
  if (!major || Number(major[1]) < 5) {
    throw new Error(
      `${found.path} bundles kustomize ${kustomize ?? '(none it names)'}; deploy/kubernetes needs kustomize 5 or later, which kubectl 1.27 and later bundle.\n` +
        'What to do: install a newer kubectl (Debian 13: `apt-get install -y kubernetes-client`; elsewhere https://kubernetes.io/docs/tasks/tools/), ' +
        'or point KUBECTL_PATH at one, then run the command again.',
    );
  }
  return found.path;
}

let kubectlFile: Promise<string> | undefined;
const kubectl = () => (kubectlFile ??= usableKubectl(inject('testTools').kubectl!));

async function kustomize(dir: string): Promise<Run> {
  return run(await kubectl(), ['kustomize', dir]);
}

const rendered = new Map<string, Promise<K8sObject[]>>();

/** The managed services' addresses and credentials an operator gives `npm run secrets:k8s` for the large overlay. */
const LARGE_SERVICES = {
  DATABASE_ADDRESS: 'postgres.example.internal:5432/contact_form',
  REDIS_ADDRESS: 'redis.example.internal:6379',
  SMTP_URL: 'smtp://forms:relay-password-from-the-provider@smtp.example.com:587',
  S3_ACCESS_KEY_ID: 'AKIAEXAMPLEKEY',
  S3_SECRET_ACCESS_KEY: 'secret-key-from-the-provider',
};

let withSecrets: Promise<string> | undefined;

/**
 * A copy of deploy/kubernetes with each overlay's secret-*.env files written as `npm run secrets:k8s`
 * writes them: the repository holds none.
 */
function kustomizeRoot(): Promise<string> {
  withSecrets ??= (async () => {
    const copy = path.join(await mkdtemp(path.join(tmpdir(), 'cfs-kubernetes-')), 'kubernetes');
    await cp(KUSTOMIZE_ROOT, copy, { recursive: true });
    for (const overlay of OVERLAYS) {
      const dir = path.join(copy, 'overlays', overlay);
      const files = kubernetesSecrets(await readFile(path.join(dir, 'kustomization.yaml'), 'utf8'), overlay === 'large' ? LARGE_SERVICES : {});
      for (const [name, values] of Object.entries(files))
        await writeFile(
          path.join(dir, name),
          Object.entries(values)
            .map(([key, value]) => `${key}=${value}\n`)
            .join(''),
        );
    }
    return copy;
  })();
  return withSecrets;
}
afterAll(async () => {
  if (withSecrets) await rm(path.dirname(await withSecrets), { recursive: true, force: true });
});

/** The objects `kubectl kustomize` renders for an overlay (once per run). */
function render(overlay: Overlay): Promise<K8sObject[]> {
  const dir = overlay;
  let objects = rendered.get(dir);
  if (!objects) {
    objects = kustomizeRoot().then(async (root) => {
      const result = await kustomize(path.join(root, 'overlays', overlay));
      if (result.code !== 0) throw new Error(`kubectl kustomize ${overlay} failed:\n${result.stderr}`);
      return parseAllDocuments(result.stdout).map((document) => {
        const object = document.toJS() as K8sObject;
        // kustomize folds long base64 values over lines, which the API server's decoder skips.
        if (object.kind === 'Secret' && object.data)
          object.data = Object.fromEntries(Object.entries(object.data).map(([key, value]) => [key, value.replace(/\n/g, '')]));
        return object;
      });
    });
    rendered.set(dir, objects);
  }
  return objects;
}

// ---- schemas ----

/** Validates an object against its kind's schema: kubernetes-models, @kubernetes-models/keda for KEDA's, @kubernetes-models/prometheus-operator for the PrometheusRule. */
async function validateObject(object: K8sObject): Promise<void> {
  const [group, version] = object.apiVersion.includes('/') ? object.apiVersion.split('/') : [undefined, object.apiVersion];
  const module =
    group === 'keda.sh'
      ? `@kubernetes-models/keda/keda.sh/${version}/${object.kind}`
      : group === 'monitoring.coreos.com'
        ? `@kubernetes-models/prometheus-operator/monitoring.coreos.com/${version}/${object.kind}`
        : `kubernetes-models/${group ? `${group}/` : ''}${version}/${object.kind}`;
  let models: Record<string, new (data: unknown) => { validate(): void }>;
  try {
    models = (await import(module)) as typeof models;
  } catch {
    throw new Error(`no schema for ${object.apiVersion} ${object.kind} (${module})`);
  }
  const Model = models[object.kind];
  if (!Model) throw new Error(`no schema for ${object.apiVersion} ${object.kind} (${module})`);
  new Model(object).validate();
}

// ---- reading the render ----

function find(objects: K8sObject[], kind: string, name: string): K8sObject {
  const found = objects.find((object) => object.kind === kind && object.metadata.name === name);
  if (!found) throw new Error(`the render has no ${kind} ${name}`);
  return found;
}

const workloads = (objects: K8sObject[]) => objects.filter((object): object is Workload => ['Deployment', 'StatefulSet', 'Job'].includes(object.kind));
const workload = (objects: K8sObject[], kind: 'Deployment' | 'StatefulSet', name: string) => find(objects, kind, name) as Workload;
const allContainers = (spec: PodSpec) => [...(spec.initContainers ?? []), ...spec.containers];
const isAppImage = (image: string) => image.split('/').pop()!.split(':')[0] === APP_IMAGE;
const componentOf = (labels: Labels | undefined) => labels?.['app.kubernetes.io/component'] ?? '(no component)';

function container(spec: PodSpec, name: string): Container {
  const found = allContainers(spec).find((item) => item.name === name);
  if (!found) throw new Error(`no container ${name}`);
  return found;
}

function dataOf(object: K8sObject): Record<string, string> {
  const decoded =
    object.kind === 'Secret'
      ? Object.fromEntries(Object.entries(object.data ?? {}).map(([key, value]) => [key, Buffer.from(value, 'base64').toString('utf8')]))
      : { ...object.data };
  return { ...decoded, ...object.stringData };
}

/** The environment a container starts with, as the kubelet builds it (envFrom, then env with $(VAR)). */
function environment(objects: K8sObject[], item: Container): Record<string, string> {
  const env: Record<string, string> = {};
  for (const from of item.envFrom ?? []) {
    const source = from.configMapRef ? find(objects, 'ConfigMap', from.configMapRef.name) : find(objects, 'Secret', from.secretRef!.name);
    for (const [key, value] of Object.entries(dataOf(source))) env[`${from.prefix ?? ''}${key}`] = value;
  }
  for (const variable of item.env ?? []) {
    if (variable.value !== undefined) {
      env[variable.name] = variable.value.replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (whole, name: string) => env[name] ?? whole);
      continue;
    }
    const ref = variable.valueFrom?.secretKeyRef ?? variable.valueFrom?.configMapKeyRef;
    if (!ref) throw new Error(`${item.name}: ${variable.name} has a source this check does not read`);
    const source = find(objects, variable.valueFrom?.secretKeyRef ? 'Secret' : 'ConfigMap', ref.name);
    const value = dataOf(source)[ref.key];
    if (value === undefined) throw new Error(`${item.name}: ${variable.name} refers to ${ref.name}'s key ${ref.key}, which it has not`);
    env[variable.name] = value;
  }
  return env;
}

/** The variables of an environment that the config schema does not know (a typo, or an old name). */
function unknownVariables(env: Record<string, string>): string[] {
  return Object.keys(env).filter((name) => !(name in EnvSchema.entries));
}

function containerPort(item: Container, port: PortRef): number {
  if (typeof port === 'number') return port;
  const found = item.ports?.find((candidate) => candidate.name === port);
  if (!found) throw new Error(`${item.name} has no port named ${port}`);
  return found.containerPort;
}

/** The container port a Service port reaches in the pods it selects. */
function serviceTarget(objects: K8sObject[], serviceName: string, port: number): { workload: Workload; item: Container; port: number } {
  const service = find(objects, 'Service', serviceName);
  const entry = (service.spec.ports as Array<{ port: number; targetPort?: PortRef }>).find((candidate) => candidate.port === port);
  if (!entry) throw new Error(`Service ${serviceName} has no port ${port}`);
  const selected = workloads(objects).filter((candidate) =>
    matches({ matchLabels: service.spec.selector as Labels }, candidate.spec.template.metadata?.labels),
  );
  expect(selected, `Service ${serviceName} selects one workload`).toHaveLength(1);
  const target = selected[0]!;
  const targetPort = entry.targetPort ?? entry.port;
  const owner = target.spec.template.spec.containers.find((item) =>
    item.ports?.some((candidate) => (typeof targetPort === 'number' ? candidate.containerPort === targetPort : candidate.name === targetPort)),
  );
  if (!owner) throw new Error(`Service ${serviceName}: no container of ${target.metadata.name} has port ${targetPort}`);
  return { workload: target, item: owner, port: containerPort(owner, targetPort) };
}

function matches(selector: Selector | undefined, labels: Labels | undefined): boolean {
  if (!selector) return false;
  const have = labels ?? {};
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) if (have[key] !== value) return false;
  for (const expression of selector.matchExpressions ?? []) {
    const value = have[expression.key];
    const values = expression.values ?? [];
    if (expression.operator === 'In' && (value === undefined || !values.includes(value))) return false;
    if (expression.operator === 'NotIn' && value !== undefined && values.includes(value)) return false;
    if (expression.operator === 'Exists' && value === undefined) return false;
    if (expression.operator === 'DoesNotExist' && value !== undefined) return false;
  }
  return true;
}

/** A quantity such as 512Mi, 1Gi or 250m as a number (bytes, or cores). */
function quantity(text: string): number {
  const match = /^(\d+(?:\.\d+)?)(m|Ki|Mi|Gi|k|M|G)?$/.exec(text);
  if (!match) throw new Error(`not a quantity: ${text}`);
  const factor = { m: 0.001, Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3, k: 1e3, M: 1e6, G: 1e9 }[match[2] ?? ''] ?? 1;
  return Number(match[1]) * factor;
}

function preStopSeconds(item: Container): number {
  const preStop = item.lifecycle?.preStop;
  if (!preStop) return 0;
  if (preStop.sleep) return preStop.sleep.seconds;
  const [command, seconds] = preStop.exec?.command ?? [];
  if (command !== 'sleep' || !seconds) throw new Error(`${item.name}: a preStop this check does not read`);
  return Number(seconds);
}

/** The argv of an npm script, as the container runs it (without the shell's `exec`). */
async function scriptArgv(): Promise<Record<string, string[]>> {
  const { scripts } = JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  return Object.fromEntries(Object.entries(scripts).map(([name, line]) => [name, line.replace(/^exec /, '').split(/\s+/)]));
}

// ---- network policies ----

type Source = { namespace: string; labels: Labels; outside?: boolean };

/** Whether a policy peer (from/to) takes in `source`. */
function peerMatches(peer: { podSelector?: Selector; namespaceSelector?: Selector; ipBlock?: { cidr: string } }, source: Source, namespace: string): boolean {
  if (peer.ipBlock) return source.outside === true && peer.ipBlock.cidr === '0.0.0.0/0';
  if (source.outside) return false;
  const namespaceOk = peer.namespaceSelector
    ? matches(peer.namespaceSelector, { 'kubernetes.io/metadata.name': source.namespace })
    : source.namespace === namespace;
  const podOk = peer.podSelector ? matches(peer.podSelector, source.labels) : true;
  return namespaceOk && podOk;
}

type Rule = { from?: object[]; to?: object[]; ports?: Array<{ port?: PortRef; protocol?: string }> };

function portMatches(rule: Rule, target: Container | undefined, port: number): boolean {
  if (!rule.ports?.length) return true;
  return rule.ports.some(
    (entry) =>
      entry.port === undefined ||
      (typeof entry.port === 'number'
        ? entry.port === port
        : target?.ports?.some((candidate) => candidate.name === entry.port && candidate.containerPort === port)),
  );
}

/** Whether the NetworkPolicies let `source` open a connection to port `port` of `target`'s pods. */
function allowed(objects: K8sObject[], source: Source & { workload?: Workload }, target: Workload, port: number): boolean {
  const policies = objects.filter((object) => object.kind === 'NetworkPolicy');
  const namespace = target.metadata.namespace ?? 'default';
  const targetLabels = target.spec.template.metadata?.labels;
  const targetContainer = target.spec.template.spec.containers.find((item) => item.ports?.some((candidate) => candidate.containerPort === port));
  const ingress = policies.filter(
    (policy) =>
      policy.metadata.namespace === target.metadata.namespace &&
      (policy.spec.policyTypes as string[]).includes('Ingress') &&
      matches(policy.spec.podSelector as Selector, targetLabels),
  );
  const ingressOk =
    ingress.length === 0 ||
    ingress.some((policy) =>
      ((policy.spec.ingress ?? []) as Rule[]).some(
        (rule) => (!rule.from?.length || rule.from.some((peer) => peerMatches(peer, source, namespace))) && portMatches(rule, targetContainer, port),
      ),
    );
  if (!ingressOk || !source.workload) return ingressOk;
  const egress = policies.filter(
    (policy) => (policy.spec.policyTypes as string[]).includes('Egress') && matches(policy.spec.podSelector as Selector, source.labels),
  );
  return (
    egress.length === 0 ||
    egress.some((policy) =>
      ((policy.spec.egress ?? []) as Rule[]).some(
        (rule) =>
          (!rule.to?.length || rule.to.some((peer) => peerMatches(peer, { namespace, labels: targetLabels ?? {} }, namespace))) &&
          portMatches(rule, targetContainer, port),
      ),
    )
  );
}

const fromWorkload = (item: Workload): Source & { workload: Workload } => ({
  namespace: item.metadata.namespace ?? 'default',
  labels: item.spec.template.metadata?.labels ?? {},
  workload: item,
});
const OUTSIDE: Source = { namespace: '(internet)', labels: {}, outside: true };

// ---- the harness: a real API, for the probe paths and the queue's list ----

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ worker: false });
});
afterAll(() => h?.stop());

describe.each(OVERLAYS)('deploy/kubernetes/overlays/%s', (overlay) => {
  it('renders with kubectl kustomize, with every part of the service', async () => {
    const objects = await render(overlay);
    for (const name of ['api', 'worker', 'bounces', 'rspamd', 'clamd']) workload(objects, 'Deployment', name);
    workload(objects, 'StatefulSet', 'rspamd-redis');
    for (const name of ['api', 'bounces', 'rspamd', 'rspamd-redis', 'clamd']) find(objects, 'Service', name);
    find(objects, 'HorizontalPodAutoscaler', 'api');
    find(objects, 'ScaledObject', 'worker');
    expect(objects.filter((object) => object.kind === 'NetworkPolicy').length).toBeGreaterThan(0);
    for (const object of objects.filter((item) => item.kind !== 'Namespace'))
      expect(object.metadata.namespace, `${object.kind} ${object.metadata.name}`).toBe('contact-form');
  });

  it('validates every object against the Kubernetes, KEDA and Prometheus Operator schemas', async () => {
    for (const object of await render(overlay)) {
      await expect(validateObject(object), `${object.kind} ${object.metadata.name}`).resolves.toBeUndefined();
    }
  });

  it("runs npm scripts' commands in the image the Dockerfile builds: the API, the workers, the bounce receiver, and the migrations before each", async () => {
    const objects = await render(overlay);
    const scripts = await scriptArgv();
    const { version } = JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };
    const expected = { api: 'start:api', worker: 'start:worker', bounces: 'start:bounces' } as const;
    for (const [name, script] of Object.entries(expected)) {
      const spec = workload(objects, 'Deployment', name).spec.template.spec;
      const main = container(spec, name);
      expect([...(main.command ?? []), ...(main.args ?? [])], name).toEqual(scripts[script]);
      // Each new pod migrates first, with `npm run migrate`'s command.
      expect(
        spec.initContainers?.map((item) => item.name),
        name,
      ).toEqual(['migrate']);
      const migrate = container(spec, 'migrate');
      expect([...(migrate.command ?? []), ...(migrate.args ?? [])], `${name} migrate`).toEqual(scripts.migrate);
      for (const item of [main, migrate]) {
        expect(item.image, `${name}/${item.name}`).toMatch(new RegExp(`(^|/)${APP_IMAGE}:${version.replaceAll('.', '\\.')}$`));
        // node's arguments that name files: the entry point and the preloaded module exist.
        for (const argument of [...(item.command ?? []), ...(item.args ?? [])]) {
          const file = /^(?:--import=)?(\.?\/?src\/.+\.(?:ts|mjs))$/.exec(argument)?.[1];
          if (file) expect(existsSync(path.join(ROOT, file)), `${name}/${item.name}: ${file}`).toBe(true);
        }
      }
    }
    // Nothing else runs the app's image.
    const appContainers = workloads(objects).flatMap((item) =>
      allContainers(item.spec.template.spec)
        .filter((candidate) => isAppImage(candidate.image))
        .map((candidate) => `${item.metadata.name}/${candidate.name}`),
    );
    expect(appContainers.sort()).toEqual(['api/api', 'api/migrate', 'bounces/bounces', 'bounces/migrate', 'worker/migrate', 'worker/worker']);
    expect(container(workload(objects, 'Deployment', 'rspamd').spec.template.spec, 'rspamd').image).toMatch(
      new RegExp(`(^|/)${RSPAMD_IMAGE}:${version.replaceAll('.', '\\.')}$`),
    );
  });

  it('sets only variables the config schema knows, with values it accepts', async () => {
    const objects = await render(overlay);
    for (const item of workloads(objects)) {
      for (const entry of allContainers(item.spec.template.spec).filter((candidate) => isAppImage(candidate.image))) {
        const where = `${item.metadata.name}/${entry.name}`;
        const env = environment(objects, entry);
        expect(unknownVariables(env), `${where}: variables of no setting in src/shared/infra/config-schema.ts`).toEqual([]);
        for (const [name, value] of Object.entries(env)) expect(value, `${where}: ${name}`).not.toBe('');
        // The migrations read DATABASE_URL alone here (src/cli/migrate.ts; behind a pooler also DATABASE_POOLER and DATABASE_DIRECT_URL).
        if (entry.name === 'migrate') {
          expect(Object.keys(env), where).toEqual(['DATABASE_URL']);
          loadConfigSubset(['DATABASE_URL'], env);
          continue;
        }
        // Throws a ConfigError naming each bad variable.
        const config = loadConfig(env);
        expect(config.BOUNCE_DOMAIN, `${where}: the bounce receiver needs BOUNCE_DOMAIN`).toBeDefined();
        for (const name of ['DATABASE_URL', 'REDIS_URL', 'SECRET', 'PUBLIC_URL']) expect(env, `${where}: ${name}`).toHaveProperty(name);
      }
    }
  });

  it('probes the API on its port at paths a running API answers 200', async () => {
    const objects = await render(overlay);
    const api = container(workload(objects, 'Deployment', 'api').spec.template.spec, 'api');
    const config = loadConfig(environment(objects, api));
    const probes = [api.startupProbe, api.readinessProbe, api.livenessProbe];
    expect(probes.every((probe) => probe?.httpGet)).toBe(true);
    for (const probe of probes) {
      expect(containerPort(api, probe!.httpGet!.port)).toBe(config.PORT);
      const response = await fetch(`${h.url}${probe!.httpGet!.path}`);
      expect(response.status, probe!.httpGet!.path).toBe(200);
    }
    // The startup probe waits for every dependency; readiness does not take the API out for a
    // dependency's outage, during which it still answers (200 for what it saves, or 503).
    expect(api.startupProbe!.httpGet!.path).toBe('/readyz');
    expect(api.readinessProbe!.httpGet!.path).toBe('/healthz');
    expect(api.livenessProbe!.httpGet!.path).toBe('/healthz');
    expect(serviceTarget(objects, 'api', 80).port).toBe(config.PORT);
  });

  it('probes the workers on their metrics port (alive: /livez), the bounce receiver on SMTP, and takes SMTP on port 25', async () => {
    const objects = await render(overlay);
    const worker = container(workload(objects, 'Deployment', 'worker').spec.template.spec, 'worker');
    const workerConfig = loadConfig(environment(objects, worker));
    expect(containerPort(worker, worker.startupProbe!.tcpSocket!.port)).toBe(workerConfig.METRICS_PORT);
    // Alive only while it takes jobs (test/workers/liveness.test.ts): a port that still accepts is not enough.
    expect(worker.livenessProbe!.httpGet!.path).toBe('/livez');
    expect(containerPort(worker, worker.livenessProbe!.httpGet!.port)).toBe(workerConfig.METRICS_PORT);
    const bounces = container(workload(objects, 'Deployment', 'bounces').spec.template.spec, 'bounces');
    const bouncesConfig = loadConfig(environment(objects, bounces));
    const probes = [bounces.startupProbe, bounces.readinessProbe, bounces.livenessProbe];
    for (const probe of probes) expect(containerPort(bounces, probe!.tcpSocket!.port), 'bounces probe').toBe(bouncesConfig.BOUNCE_SMTP_PORT);
    const smtp = serviceTarget(objects, 'bounces', 25);
    expect(smtp.item.name).toBe('bounces');
    expect(smtp.port).toBe(loadConfig(environment(objects, bounces)).BOUNCE_SMTP_PORT);
    // An unprivileged port: the process runs with no capability.
    expect(smtp.port).toBeGreaterThanOrEqual(1024);
    const service = find(objects, 'Service', 'bounces');
    expect(service.spec).toMatchObject({ type: 'LoadBalancer', externalTrafficPolicy: 'Local' });
  });

  it("reaches rspamd and its Redis where rspamd's image listens, and probes rspamd where the service checks it is up", async () => {
    const objects = await render(overlay);
    const dockerfile = await readFile(path.join(ROOT, 'rspamd/Dockerfile'), 'utf8');
    const listens = (variable: string) => Number(new RegExp(`--var=${variable}=[\\d.]+:(\\d+)`).exec(dockerfile)?.[1]);
    const rspamd = container(workload(objects, 'Deployment', 'rspamd').spec.template.spec, 'rspamd');
    // The image's command reads exactly the variables the container sets.
    const read = new Set([...dockerfile.matchAll(/\$\{?([A-Z_][A-Z0-9_]*)/g)].map((match) => match[1]));
    for (const name of Object.keys(environment(objects, rspamd))) expect(read, `rspamd sets ${name}`).toContain(name);
    const localRspamd = await readFile(path.join(ROOT, 'src/local/rspamd.ts'), 'utf8');
    for (const probe of [rspamd.startupProbe, rspamd.readinessProbe, rspamd.livenessProbe]) {
      expect(containerPort(rspamd, probe!.httpGet!.port)).toBe(listens('CFS_SCAN_SOCKET'));
      // The path the service's own start-up waits on.
      expect(localRspamd).toContain(`'${probe!.httpGet!.path}'`);
    }
    const worker = container(workload(objects, 'Deployment', 'worker').spec.template.spec, 'worker');
    const config = loadConfig(environment(objects, worker));
    for (const [setting, variable] of [
      ['SPAM_FILTER_URL', 'CFS_SCAN_SOCKET'],
      ['SPAM_FILTER_CONTROLLER_URL', 'CFS_CONTROLLER_SOCKET'],
    ] as const) {
      const url = new URL(config[setting]!);
      const target = serviceTarget(objects, url.hostname, Number(url.port));
      expect(target.workload.metadata.name, setting).toBe('rspamd');
      expect(target.port, setting).toBe(listens(variable));
    }
    const [host, port] = environment(objects, rspamd).RSPAMD_REDIS!.split(':');
    const statistics = serviceTarget(objects, host!, Number(port));
    expect(statistics.workload.kind).toBe('StatefulSet');
    expect(statistics.port).toBe(6379);
    // Statistics may be evicted; the queues' Redis never is (that one is outside, or small's own).
    expect(container(statistics.workload.spec.template.spec, 'redis').args).toContain('allkeys-lru');
  });

  it("scans files with clamd from ClamAV's official image: the workers' CLAMD_HOST and CLAMD_PORT reach it, with the memory its database needs", async () => {
    const objects = await render(overlay);
    const worker = container(workload(objects, 'Deployment', 'worker').spec.template.spec, 'worker');
    const config = loadConfig(environment(objects, worker));
    expect(config).toMatchObject({ CLAMD_HOST: 'clamd', CLAMD_PORT: 3310 });
    const target = serviceTarget(objects, config.CLAMD_HOST!, config.CLAMD_PORT);
    expect(target.workload.metadata.name).toBe('clamd');
    // The official image's clamd listens on TCP 3310 (its TCPSocket).
    expect(target.port).toBe(3310);
    expect(target.item.image).toMatch(/^clamav\/clamav:\d+\.\d+\.\d+$/);
    // The image's entry point for a non-root user, which writes its configuration to /tmp, not /etc.
    expect(target.item.command).toEqual(['/init-unprivileged']);
    for (const probe of [target.item.startupProbe, target.item.readinessProbe, target.item.livenessProbe])
      expect(containerPort(target.item, probe!.tcpSocket!.port)).toBe(3310);
    // About 1.5 GiB with the full database, and room for a second copy while it loads an update.
    const { requests, limits } = target.item.resources!;
    expect(quantity(requests!.memory!)).toBeGreaterThanOrEqual(1.5 * 1024 ** 3);
    expect(quantity(limits!.memory!)).toBeGreaterThanOrEqual(2 * quantity(requests!.memory!));
    // The database the image comes with is copied into the pod's volume before clamd starts.
    const spec = target.workload.spec.template.spec;
    const database = target.item.volumeMounts!.find((mount) => mount.mountPath === '/var/lib/clamav')!;
    const copy = container(spec, 'database');
    expect(copy.image).toBe(target.item.image);
    expect(copy.volumeMounts?.map((mount) => mount.name)).toEqual([database.name]);
    expect(spec.volumes?.find((volume) => volume.name === database.name)?.emptyDir).toBeDefined();
  });

  it('gives stopping pods longer than the processes take to drain', async () => {
    const objects = await render(overlay);
    for (const name of ['api', 'worker', 'bounces']) {
      const spec = workload(objects, 'Deployment', name).spec.template.spec;
      const main = container(spec, name);
      const drain = loadConfig(environment(objects, main)).SHUTDOWN_TIMEOUT_MS / 1000 + SHUTDOWN_MARGIN_S;
      expect(spec.terminationGracePeriodSeconds, name).toBeGreaterThan(preStopSeconds(main) + drain);
    }
    // The API and the bounce receiver keep serving while their endpoints are removed.
    for (const name of ['api', 'bounces'])
      expect(preStopSeconds(container(workload(objects, 'Deployment', name).spec.template.spec, name)), name).toBeGreaterThan(0);
  });

  it("scales the workers on the email queue's waiting jobs, and the API on CPU, within stated bounds", async () => {
    const objects = await render(overlay);
    const worker = workload(objects, 'Deployment', 'worker');
    const config = loadConfig(environment(objects, container(worker.spec.template.spec, 'worker')));
    const scaled = find(objects, 'ScaledObject', 'worker');
    expect(scaled.spec.scaleTargetRef.name).toBe('worker');
    // The autoscalers own the counts: a fixed one would be reset by every apply.
    expect(worker.spec.replicas).toBeUndefined();
    expect(workload(objects, 'Deployment', 'api').spec.replicas).toBeUndefined();
    // Never zero: the workers also run the reconciler, retention and the webhooks.
    expect(scaled.spec.minReplicaCount).toBeGreaterThanOrEqual(1);
    expect(scaled.spec.maxReplicaCount).toBeGreaterThan(scaled.spec.minReplicaCount);
    expect(scaled.spec.advanced.horizontalPodAutoscalerConfig.behavior.scaleDown.stabilizationWindowSeconds).toBeGreaterThanOrEqual(120);
    const triggers = scaled.spec.triggers as Array<{ type: string; metadata: Record<string, string>; authenticationRef: { name: string } }>;
    // The emails and the webhooks, each its own queue.
    expect(triggers.map((item) => item.metadata.listName)).toEqual([
      `${config.QUEUE_PREFIX}:${DELIVERY_QUEUE}:wait`,
      `${config.QUEUE_PREFIX}:${WEBHOOK_QUEUE}:wait`,
    ]);
    for (const item of triggers) {
      expect(item.type).toBe('redis');
      expect(Number(item.metadata.listLength)).toBeGreaterThan(0);
      expect(item.authenticationRef.name).toBe(triggers[0]!.authenticationRef.name);
    }
    const trigger = triggers[0];

    // KEDA reaches the workers' Redis as a user of its own, not with the processes' password.
    const auth = find(objects, 'TriggerAuthentication', trigger!.authenticationRef.name);
    const parameters = Object.fromEntries(
      (auth.spec.secretTargetRef as Array<{ parameter: string; name: string; key: string }>).map((ref) => [
        ref.parameter,
        dataOf(find(objects, 'Secret', ref.name))[ref.key],
      ]),
    );
    const redis = new URL(config.REDIS_URL);
    const [host, port] = parameters.address!.split(':');
    expect([redis.hostname, `${redis.hostname}.${worker.metadata.namespace}.svc.cluster.local`]).toContain(host);
    expect(Number(port)).toBe(Number(redis.port || 6379));
    expect(parameters.username).toBe('keda');
    expect(parameters.password).not.toBe(decodeURIComponent(redis.password));
    if (overlay === 'small') {
      const redisEnv = environment(objects, container(workload(objects, 'StatefulSet', 'redis').spec.template.spec, 'redis'));
      expect(parameters.password).toBe(redisEnv.KEDA_REDIS_PASSWORD);
    }

    const hpa = find(objects, 'HorizontalPodAutoscaler', 'api');
    expect(hpa.spec.scaleTargetRef).toMatchObject({ kind: 'Deployment', name: 'api' });
    expect(hpa.spec.metrics).toEqual([
      { type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: expect.any(Number) } } },
    ]);
    expect(hpa.spec.minReplicas).toBeGreaterThanOrEqual(1);
    expect(hpa.spec.maxReplicas).toBeGreaterThan(hpa.spec.minReplicas);
    expect(hpa.spec.behavior.scaleDown.stabilizationWindowSeconds).toBeGreaterThanOrEqual(120);
  });

  it('runs every container unprivileged on a read-only root, with requests and a memory limit', async () => {
    const objects = await render(overlay);
    for (const item of workloads(objects)) {
      const spec = item.spec.template.spec;
      const where = `${item.kind} ${item.metadata.name}`;
      expect(spec.automountServiceAccountToken, where).toBe(false);
      expect(spec.enableServiceLinks, where).toBe(false);
      expect(spec.hostNetwork, where).toBeUndefined();
      expect(spec.securityContext?.runAsNonRoot, where).toBe(true);
      expect(spec.securityContext?.runAsUser, where).toBeGreaterThan(0);
      expect(spec.securityContext?.seccompProfile?.type, where).toBe('RuntimeDefault');
      const volumes = new Set([...(spec.volumes ?? []), ...(item.spec.volumeClaimTemplates ?? []).map((claim) => claim.metadata)].map((volume) => volume.name));
      for (const entry of allContainers(spec)) {
        const at = `${where}/${entry.name}`;
        expect(entry.securityContext, at).toMatchObject({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } });
        expect(entry.securityContext?.privileged, at).toBeUndefined();
        expect(entry.securityContext?.capabilities?.add, at).toBeUndefined();
        expect(entry.ports?.some((port) => port.hostPort !== undefined) ?? false, at).toBe(false);
        const { requests, limits } = entry.resources ?? {};
        expect(requests?.cpu, at).toBeDefined();
        expect(requests?.memory, at).toBeDefined();
        expect(limits?.memory, at).toBeDefined();
        expect(quantity(limits!.memory!), at).toBeGreaterThanOrEqual(quantity(requests!.memory!));
        for (const mount of entry.volumeMounts ?? []) expect(volumes.has(mount.name), `${at}: ${mount.name}`).toBe(true);
        if (isAppImage(entry.image)) {
          // The processes write nothing but a scratch /tmp.
          expect(entry.volumeMounts, at).toEqual([{ name: 'tmp', mountPath: '/tmp' }]);
          expect(spec.volumes?.find((volume) => volume.name === 'tmp')?.emptyDir, at).toBeDefined();
        }
      }
      // The app's pods run as the image's node user, whose compile cache the image holds.
      if (allContainers(spec).some((entry) => isAppImage(entry.image))) expect(spec.securityContext?.runAsUser, where).toBe(1000);
    }
    const namespace = find(objects, 'Namespace', 'contact-form');
    expect(namespace.metadata.labels?.['pod-security.kubernetes.io/enforce']).toBe('restricted');
  });

  it('puts a disruption budget on every Deployment and StatefulSet that never blocks a drain', async () => {
    const objects = await render(overlay);
    const budgets = objects.filter((object) => object.kind === 'PodDisruptionBudget');
    for (const item of workloads(objects).filter((candidate) => candidate.kind !== 'Job')) {
      const covering = budgets.filter((budget) => matches(budget.spec.selector as Selector, item.spec.template.metadata?.labels));
      expect(
        covering.map((budget) => budget.spec),
        `${item.kind} ${item.metadata.name}`,
      ).toEqual([{ maxUnavailable: 1, selector: expect.anything() }]);
    }
  });

  it('gives each process a Secret with only the keys it uses, and the migrations alone the schema owner', async () => {
    const objects = await render(overlay);
    // What each process reads of the secret settings (src/shared/infra/sample-values.ts names them):
    // the API no relay (the workers send), the internet-facing bounce receiver neither the relay,
    // the storage, the spam filter nor ADMIN_TOKEN (it serves no metrics here).
    const uses: Record<string, string[]> = {
      api: ['ADMIN_TOKEN', 'DATABASE_URL', 'REDIS_URL', 'S3_ACCESS_KEY_ID', 'S3_SECRET_ACCESS_KEY', 'SECRET', 'SPAM_FILTER_PASSWORD'],
      worker: ['ADMIN_TOKEN', 'DATABASE_URL', 'REDIS_URL', 'S3_ACCESS_KEY_ID', 'S3_SECRET_ACCESS_KEY', 'SECRET', 'SMTP_URL', 'SPAM_FILTER_PASSWORD'],
      bounces: ['DATABASE_URL', 'REDIS_URL', 'SECRET'],
      migrate: ['DATABASE_URL'],
      rspamd: ['SPAM_FILTER_PASSWORD'],
    };
    const secretKeys = (item: Container) => [
      ...(item.envFrom ?? []).filter((from) => from.secretRef).flatMap((from) => Object.keys(dataOf(find(objects, 'Secret', from.secretRef!.name)))),
      ...(item.env ?? []).filter((variable) => variable.valueFrom?.secretKeyRef).map((variable) => variable.name),
    ];
    for (const name of ['api', 'worker', 'bounces', 'rspamd']) {
      const spec = workload(objects, 'Deployment', name).spec.template.spec;
      for (const item of allContainers(spec)) {
        const keys = secretKeys(item);
        const allowed = uses[item.name === 'migrate' ? 'migrate' : name]!;
        expect(
          keys.filter((key) => !allowed.includes(key)),
          `${name}/${item.name}: keys it does not use`,
        ).toEqual([]);
      }
    }
    // The workers need the relay, and nobody else has it.
    expect(secretKeys(container(workload(objects, 'Deployment', 'worker').spec.template.spec, 'worker'))).toContain('SMTP_URL');
    // The migrations connect as another user than the processes: the schema's owner, which only they use.
    const apiSpec = workload(objects, 'Deployment', 'api').spec.template.spec;
    const owner = new URL(environment(objects, container(apiSpec, 'migrate')).DATABASE_URL!).username;
    for (const name of ['api', 'worker', 'bounces']) {
      const spec = workload(objects, 'Deployment', name).spec.template.spec;
      expect(new URL(environment(objects, container(spec, 'migrate')).DATABASE_URL!).username, `${name}/migrate`).toBe(owner);
      expect(new URL(environment(objects, container(spec, name)).DATABASE_URL!).username, name).not.toBe(owner);
    }
  });

  it('lets each process of the service connect out only to the ports of what it uses', async () => {
    const objects = await render(overlay);
    const policies = objects.filter((object) => object.kind === 'NetworkPolicy' && (object.spec.policyTypes as string[]).includes('Egress'));
    const egressPorts = (component: string) => {
      const labels = workloads(objects).find((item) => componentOf(item.spec.template.metadata?.labels) === component)!.spec.template.metadata!.labels!;
      const selecting = policies.filter((policy) => matches(policy.spec.podSelector as Selector, labels));
      expect(selecting.length, `${component}: an egress policy`).toBeGreaterThan(0);
      return new Set(selecting.flatMap((policy) => (policy.spec.egress as Rule[]).flatMap((rule) => (rule.ports ?? []).map((port) => port.port))));
    };
    const dns = [53];
    const data = [5432, 6379];
    const expected: Record<string, number[]> = {
      api: [...dns, ...data, 443, 11334, ...(overlay === 'small' ? [9000] : [])],
      // SMTP (25, 465, 587), S3 and webhooks (443, 80), rspamd, clamd.
      worker: [...dns, ...data, 25, 465, 587, 443, 80, 11333, 11334, 3310, ...(overlay === 'small' ? [9000, 1025] : [])],
      bounces: [...dns, ...data],
      rspamd: [...dns, 6379],
      // freshclam's signature updates, over HTTPS.
      clamd: [...dns, 443],
    };
    for (const [component, ports] of Object.entries(expected)) expect([...egressPorts(component)].sort(), component).toEqual([...ports].sort());
    // Every egress rule names its ports: none opens everything.
    for (const policy of policies) for (const rule of (policy.spec.egress ?? []) as Rule[]) expect(rule.ports?.length, policy.metadata.name).toBeGreaterThan(0);
  });

  it('pins every image by version: no latest, no bare major', async () => {
    const objects = await render(overlay);
    for (const item of workloads(objects))
      for (const entry of allContainers(item.spec.template.spec)) {
        const tag = entry.image.split('@')[0]!.split(':').pop()!;
        expect(tag, `${item.metadata.name}/${entry.name}: ${entry.image}`).toMatch(
          /^(\d+\.\d+\.\d+(-[a-z0-9]+)?|v\d+\.\d+\.\d+|\d+\.\d+-alpine|RELEASE\.[\dT-]+Z)$/,
        );
      }
  });

  it('lets traffic from anywhere reach only the API and the bounce receiver, and rspamd and its Redis only the pods that use them', async () => {
    const objects = await render(overlay);
    const all = workloads(objects);
    const byComponent = (component: string) => {
      const found = all.find((item) => componentOf(item.spec.template.metadata?.labels) === component);
      if (!found) throw new Error(`no workload ${component}`);
      return found;
    };
    const portsOf = (item: Workload) => item.spec.template.spec.containers.flatMap((entry) => (entry.ports ?? []).map((port) => port.containerPort));
    const open = all.flatMap((item) =>
      portsOf(item)
        .filter((port) => allowed(objects, OUTSIDE, item, port))
        .map((port) => `${componentOf(item.spec.template.metadata?.labels)}:${port}`),
    );
    const config = loadConfig(environment(objects, container(byComponent('bounces').spec.template.spec, 'bounces')));
    expect(open.sort()).toEqual([`api:${config.PORT}`, `bounces:${config.BOUNCE_SMTP_PORT}`]);

    // Who reaches rspamd and its Redis, among every pod of the render.
    const reaching = (target: Workload, port: number) =>
      all
        .filter((item) => item !== target && allowed(objects, fromWorkload(item), target, port))
        .map((item) => componentOf(item.spec.template.metadata?.labels))
        .sort();
    const rspamd = byComponent('rspamd');
    // The API only teaches (the controller); its egress policy does not open the scanner.
    expect(reaching(rspamd, 11333)).toEqual(['worker']);
    expect(reaching(rspamd, 11334)).toEqual(['api', 'worker']);
    expect(reaching(byComponent('rspamd-redis'), 6379)).toEqual(['rspamd']);
    // Only the workers scan files.
    expect(reaching(byComponent('clamd'), 3310)).toEqual(['worker']);
    expect(allowed(objects, { namespace: 'elsewhere', labels: byComponent('worker').spec.template.metadata!.labels! }, rspamd, 11333)).toBe(false);

    // The service still reaches what it needs.
    const trial = overlay === 'small';
    const needs: Array<[string, string, number]> = [
      ['worker', 'rspamd', 11333],
      ['worker', 'rspamd', 11334],
      ['api', 'rspamd', 11334],
      ['rspamd', 'rspamd-redis', 6379],
      ['worker', 'clamd', 3310],
      ...(trial
        ? ([
            ['api', 'postgres', 5432],
            ['worker', 'postgres', 5432],
            ['bounces', 'postgres', 5432],
            ['api', 'redis', 6379],
            ['worker', 'redis', 6379],
            ['bounces', 'redis', 6379],
            ['api', 'minio', 9000],
            ['worker', 'minio', 9000],
            ['minio-bucket', 'minio', 9000],
            ['worker', 'mailpit', 1025],
          ] as Array<[string, string, number]>)
        : []),
    ];
    for (const [from, to, port] of needs)
      expect(allowed(objects, fromWorkload(byComponent(from)), byComponent(to), port), `${from} → ${to}:${port}`).toBe(true);
    if (trial) expect(allowed(objects, { namespace: 'keda', labels: {} }, byComponent('redis'), 6379), 'KEDA → redis').toBe(true);
  });
});

describe('the queue KEDA watches', () => {
  it("holds the email jobs waiting for a worker: BullMQ's list that the ScaledObject names", async () => {
    const objects = await render('large');
    const manifestPrefix = loadConfig(environment(objects, container(workload(objects, 'Deployment', 'worker').spec.template.spec, 'worker'))).QUEUE_PREFIX;
    const listName = (find(objects, 'ScaledObject', 'worker').spec.triggers[0].metadata as Record<string, string>).listName!;
    expect(listName.startsWith(manifestPrefix)).toBe(true);
    // The same list under this test's own prefix; no worker runs, so the jobs wait.
    const key = `${h.config.QUEUE_PREFIX}${listName.slice(manifestPrefix.length)}`;
    const owner = await h.createKey({ email: 'owner@example.test' });
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const response = await submitJson(h, { access_key: owner.key, email: 'visitor@example.org', message: `Message ${i}` });
      expect(response.status).toBe(200);
      ids.push(response.json.submission_id as string);
    }
    const redis = new Redis(h.env.REDIS_URL!);
    try {
      expect(await redis.type(key)).toBe('list');
      expect(await redis.lrange(key, 0, -1)).toEqual(expect.arrayContaining(ids));
    } finally {
      redis.disconnect();
    }
  });
});

describe("KEDA's Redis user", () => {
  it('reads the lengths of the lists it watches, and nothing else', async () => {
    const objects = await render('small');
    const redis = container(workload(objects, 'StatefulSet', 'redis').spec.template.spec, 'redis');
    const args = redis.args ?? [];
    const start = args.indexOf('--user');
    const rules = args.slice(start + 2, args.findIndex((arg, index) => index > start && arg.startsWith('--')) >>> 0);
    // On this test's Redis, under a name and a prefix of its own.
    const name = `keda-${process.pid}`;
    const prefix = `{keda${process.pid}}`;
    const admin = new Redis(h.env.REDIS_URL!);
    try {
      await admin.call(
        'ACL',
        'SETUSER',
        name,
        ...rules.map((rule) => rule.replace('$(KEDA_REDIS_PASSWORD)', 'keda-test-password').replaceAll('{cfs}', prefix)),
      );
      const list = `${prefix}:${DELIVERY_QUEUE}:wait`;
      await admin.rpush(list, 'job-1', 'job-2');
      await admin.set(`${prefix}:secret-data`, 'x');
      const keda = new Redis(h.env.REDIS_URL!, { username: name, password: 'keda-test-password', maxRetriesPerRequest: 0 });
      try {
        // What KEDA's redis scaler sends: the key's type, then its length.
        expect(await keda.ping()).toBe('PONG');
        expect(await keda.type(list)).toBe('list');
        expect(await keda.llen(list)).toBe(2);
        expect(await keda.llen(`${prefix}:${WEBHOOK_QUEUE}:wait`)).toBe(0);
        await expect(keda.lrange(list, 0, -1)).rejects.toThrow(/NOPERM/);
        await expect(keda.get(`${prefix}:secret-data`)).rejects.toThrow(/NOPERM/);
        await expect(keda.llen(`${prefix}:other:wait`)).rejects.toThrow(/NOPERM/);
        await expect(keda.del(list)).rejects.toThrow(/NOPERM/);
      } finally {
        keda.disconnect();
      }
      await admin.del(list, `${prefix}:secret-data`);
    } finally {
      await admin.call('ACL', 'DELUSER', name);
      admin.disconnect();
    }
  });
});

describe('the repository', () => {
  it('holds no secret value in deploy/kubernetes: the Secrets come from files git ignores, in a copied overlay too', async () => {
    const files = (await run('git', ['ls-files', 'deploy', 'docker-compose.yml'])).stdout.trim().split('\n');
    expect(files.filter((file) => /secret[^/]*\.env$|keda-redis\.env$|trial-services\.env$/.test(file))).toEqual([]);
    for (const file of files) {
      const text = (await readFile(path.join(ROOT, file), 'utf8')).toLowerCase();
      for (const sample of PUBLISHED_SAMPLE_VALUES) expect(text, `${file} holds ${sample}`).not.toMatch(new RegExp(`[=:/]${sample}[@\\s"]`));
    }
    const ignored = await run('git', [
      'check-ignore',
      '--no-index',
      'deploy/kubernetes/overlays/mine/secret-api.env',
      'deploy/kubernetes/overlays/large/secret-worker.env',
    ]);
    expect(ignored.stdout.trim().split('\n')).toHaveLength(2);
  });
});

describe('the check itself', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'cfs-kustomize-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('fails when a kustomization names a file that is not there', async () => {
    const copy = path.join(dir, 'kubernetes');
    await cp(await kustomizeRoot(), copy, { recursive: true });
    const file = path.join(copy, 'base/kustomization.yaml');
    await writeFile(file, (await readFile(file, 'utf8')).replace('  - api.yaml\n', '  - api.yaml\n  - ingress-routes.yaml\n'));
    const result = await kustomize(path.join(copy, 'overlays/small'));
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('ingress-routes.yaml');
  });

  it('fails on objects the schemas refuse: a port named where a number belongs, a ScaledObject without its target', async () => {
    const objects = await render('small');
    const deployment = structuredClone(workload(objects, 'Deployment', 'worker'));
    deployment.spec.template.spec.containers[0]!.ports![0]!.containerPort = 'metrics' as unknown as number;
    await expect(validateObject(deployment)).rejects.toThrow(/containerPort must be integer/);
    const scaled = structuredClone(find(objects, 'ScaledObject', 'worker'));
    delete scaled.spec.scaleTargetRef;
    await expect(validateObject(scaled)).rejects.toThrow(/scaleTargetRef/);
    await expect(validateObject({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w' } })).rejects.toThrow(
      /no schema for example.com\/v1 Widget/,
    );
  });

  it('names a variable the config schema does not know', async () => {
    const objects = await render('small');
    const env = environment(objects, container(workload(objects, 'Deployment', 'worker').spec.template.spec, 'worker'));
    expect(unknownVariables({ ...env, WORKER_CONCURENCY: '10' })).toEqual(['WORKER_CONCURENCY']);
  });

  it('says how to get a newer kubectl when the one found bundles an old kustomize', async () => {
    const old = path.join(dir, 'kubectl-1.20');
    // What kubectl 1.20 (Debian 12's kubernetes-client) prints: no kustomizeVersion.
    await writeFile(old, '#!/bin/sh\necho \'{"clientVersion":{"major":"1","minor":"20","gitVersion":"v1.20.2"}}\'\n');
    await chmod(old, 0o755);
    await expect(usableKubectl({ path: old })).rejects.toThrow(/needs kustomize 5 or later[^]*apt-get install -y kubernetes-client[^]*KUBECTL_PATH/);
    await expect(usableKubectl({ problem: 'kubectl is not installed (not found on PATH)' })).rejects.toThrow('kubectl is not installed');
  });
});

describe('the trial overlay (small)', () => {
  it("starts PostgreSQL, Redis, MinIO and Mailpit with the credentials and addresses the service is given, from docker-compose.yml's images", async () => {
    const objects = await render('small');
    const env = environment(objects, container(workload(objects, 'Deployment', 'api').spec.template.spec, 'api'));
    const compose = parse(await readFile(path.join(ROOT, 'docker-compose.yml'), 'utf8')) as { services: Record<string, { image?: string }> };
    const composeImages = new Set(Object.values(compose.services).map((service) => service.image));

    const postgres = workload(objects, 'StatefulSet', 'postgres');
    const postgresEnv = environment(objects, container(postgres.spec.template.spec, 'postgres'));
    const database = new URL(env.DATABASE_URL!);
    expect(database.hostname).toBe('postgres');
    expect(database.pathname).toBe(`/${postgresEnv.POSTGRES_DB}`);
    // The migrations as the schema's owner, the image's first user; the processes as the role its
    // init script creates, with the password it is given.
    const owner = new URL(environment(objects, container(workload(objects, 'Deployment', 'api').spec.template.spec, 'migrate')).DATABASE_URL!);
    expect(decodeURIComponent(owner.username)).toBe(postgresEnv.POSTGRES_USER);
    expect(decodeURIComponent(owner.password)).toBe(postgresEnv.POSTGRES_PASSWORD);
    expect(decodeURIComponent(database.password)).toBe(postgresEnv.APP_DATABASE_PASSWORD);
    const roles = dataOf(find(objects, 'ConfigMap', 'postgres-roles'))['app-role.sh']!;
    expect(roles).toContain(`CREATE ROLE ${database.username} LOGIN PASSWORD :'password'`);
    expect(roles).toContain('-v password="$APP_DATABASE_PASSWORD"');
    expect(serviceTarget(objects, 'postgres', Number(database.port)).workload).toBe(postgres);

    const redis = workload(objects, 'StatefulSet', 'redis');
    const redisContainer = container(redis.spec.template.spec, 'redis');
    const queues = new URL(env.REDIS_URL!);
    expect(serviceTarget(objects, queues.hostname, Number(queues.port)).workload).toBe(redis);
    const args = (redisContainer.args ?? []).join(' ');
    expect(args).toContain('--appendonly yes');
    expect(args).toContain('--maxmemory-policy noeviction');
    expect(args).toContain('--requirepass $(REDIS_PASSWORD)');
    expect(decodeURIComponent(queues.password)).toBe(environment(objects, redisContainer).REDIS_PASSWORD);

    const minio = workload(objects, 'StatefulSet', 'minio');
    const minioEnv = environment(objects, container(minio.spec.template.spec, 'minio'));
    expect(env.S3_ACCESS_KEY_ID).toBe(minioEnv.MINIO_ROOT_USER);
    expect(env.S3_SECRET_ACCESS_KEY).toBe(minioEnv.MINIO_ROOT_PASSWORD);
    const storage = new URL(env.S3_ENDPOINT!);
    expect(serviceTarget(objects, storage.hostname, Number(storage.port)).workload).toBe(minio);
    const bucketJob = find(objects, 'Job', 'minio-bucket') as Workload;
    const mc = container(bucketJob.spec.template.spec, 'mc');
    const mcEnv = environment(objects, mc);
    expect(mcEnv.S3_BUCKET).toBe(env.S3_BUCKET);
    expect(mcEnv.MC_HOST_local).toBe(`http://${env.S3_ACCESS_KEY_ID}:${env.S3_SECRET_ACCESS_KEY}@${storage.host}`);
    expect(mc.args?.join(' ')).toContain('mc mb --ignore-existing "local/$S3_BUCKET"');

    const smtp = new URL(environment(objects, container(workload(objects, 'Deployment', 'worker').spec.template.spec, 'worker')).SMTP_URL!);
    expect(serviceTarget(objects, smtp.hostname, Number(smtp.port)).workload.metadata.name).toBe('mailpit');

    for (const item of [postgres, redis, minio, bucketJob, workload(objects, 'Deployment', 'mailpit')]) {
      for (const entry of allContainers(item.spec.template.spec)) expect(composeImages, `${item.metadata.name}: ${entry.image}`).toContain(entry.image);
    }
  });
});

describe('the alert rules', () => {
  it("are deploy/prometheus/rules.yml's, as a PrometheusRule in the large overlay; the trial, whose cluster seldom runs the Prometheus Operator, leaves it out", async () => {
    const rules = parse(await readFile(path.join(ROOT, 'deploy/prometheus/rules.yml'), 'utf8')) as unknown;
    expect(find(await render('large'), 'PrometheusRule', 'contact-form-service').spec).toEqual(rules);
    expect((await render('small')).filter((object) => object.kind === 'PrometheusRule')).toEqual([]);
  });
});

describe('the large overlay', () => {
  it("serves PUBLIC_URL's host through the Ingress, to the API's Service", async () => {
    const objects = await render('large');
    const config = loadConfig(environment(objects, container(workload(objects, 'Deployment', 'api').spec.template.spec, 'api')));
    const ingress = find(objects, 'Ingress', 'api');
    const host = new URL(config.PUBLIC_URL).hostname;
    expect(ingress.spec.rules).toEqual([
      { host, http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: 'api', port: { name: 'http' } } } }] } },
    ]);
    expect(ingress.spec.tls[0].hosts).toEqual([host]);
    expect(config.TRUST_PROXY).toEqual({ hops: 1 });
  });
});
