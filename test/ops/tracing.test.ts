// Traces across the pipeline, for operators who run OpenTelemetry: with OTEL_EXPORTER_OTLP_ENDPOINT
// set, a submission is one trace, from the API's request span (its root) through the queue to the
// worker's spam check and email, and to the webhook delivery, each span under its parent. Without
// it, the processes load none of the OpenTelemetry SDK.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/local/services.ts';
import { enqueueDelivery } from '../../src/shared/infra/queues/queues.ts';
import { submissionJob } from '../../src/shared/deliveries/delivery-jobs.ts';
import { createdEventId } from '../../src/shared/webhooks/created-event-id.ts';
import { buildSubmission, buildWebhookEndpoint } from '../support/factories.ts';
import { eventually, postJson, startHarness, type Harness } from '../support/harness.ts';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver.ts';
import { startReceiver, type Receiver } from '../support/webhook-receiver.ts';
import { SERVICE_START_WAIT_MS, spawnApi, spawnWorker, type WorkerChild } from '../support/workers.ts';

const LOAD_WATCH = `--import=${path.resolve(import.meta.dirname, '../support/otel-load-watch.ts')}`;
const LOADED = 'opentelemetry sdk loaded';
const SERVER = 2;
const CONSUMER = 5;

let h: Harness;
let hooks: Receiver;
let collector: OtlpReceiver;
const children: WorkerChild[] = [];

beforeAll(async () => {
  // The API and the worker run as processes of their own, as deployed: each starts its SDK, or none.
  h = await startHarness({ env: { WEBHOOK_ALLOW: '127.0.0.2' }, worker: false });
  hooks = await startReceiver('127.0.0.2');
  collector = await startOtlpReceiver();
});
afterAll(async () => {
  for (const child of children) await child.stop();
  await collector?.close();
  await hooks?.close();
  await h?.stop();
});

/** An API and a worker on this file's services, with `env` added; the API's URL. */
async function startProcesses(env: Record<string, string>): Promise<{ url: string; api: WorkerChild; worker: WorkerChild }> {
  const port = await freePort();
  const common = { ...h.env, ...env, NODE_OPTIONS: LOAD_WATCH };
  const [api, worker] = await Promise.all([spawnApi({ ...common, PORT: String(port) }), spawnWorker(common)]);
  children.push(api, worker);
  return { url: `http://127.0.0.1:${port}`, api, worker };
}

/** A submission to a key with a webhook, through `url`: its id, once its email and its webhook are out. */
async function submitWithWebhook(url: string): Promise<{ submissionId: string; deliveryId: string }> {
  const key = await h.createKey();
  const endpoint = await buildWebhookEndpoint(h, { key, url: hooks.url });
  const answer = await postJson(`${url}/api/contact-api/`, { access_key: key.key, email: 'visitor@example.org', message: 'traced, or not' });
  expect(answer.status).toBe(200);
  const submissionId = answer.json.submission_id as string;
  const deliveryId = createdEventId(submissionId, endpoint.id);
  await eventually(
    async () => {
      const [row] = await h.sql<{ email: string; hook: string }>(
        'select s.email_status as email, w.email_status as hook from submissions s join webhook_deliveries w on w.submission_id = s.id where s.id = $1',
        [submissionId],
      );
      return row?.email === 'sent' && row.hook === 'sent' ? true : undefined;
    },
    30_000,
    'the email and the webhook sent',
  );
  return { submissionId, deliveryId };
}

/** The names from `span` up to its trace's root, following the parent links among `spans`. */
function ancestry(span: ReceivedSpan, spans: ReceivedSpan[]): ReceivedSpan[] {
  const chain = [span];
  for (let parent = span.parentSpanId; parent !== undefined;) {
    const next = spans.find((candidate) => candidate.spanId === parent && candidate.traceId === span.traceId);
    if (!next) break;
    chain.push(next);
    parent = next.parentSpanId;
  }
  return chain;
}

/** The span named `name` whose `attribute` is `value`, once it and its parents up to a root have arrived. */
async function spanWithParents(name: string, attribute: string, value: string): Promise<ReceivedSpan> {
  const find = () => collector.spans.find((span) => span.name === name && span.attributes[attribute] === value);
  // A parent ends after its children and is exported after them: wait until the chain has its root,
  // then let the caller's assertions say what is missing, if anything still is.
  await eventually(
    async () => {
      const span = find();
      return span && ancestry(span, collector.spans).at(-1)!.parentSpanId === undefined ? true : undefined;
    },
    30_000,
    `the span ${name} and its parents`,
  ).catch(() => undefined);
  const span = find();
  if (!span) throw new Error(`no span ${name} arrived; spans: ${collector.spans.map((received) => received.name).join(', ')}`);
  return span;
}

/** The API and the worker with tracing on, started for the first test that needs them. */
let traced: ReturnType<typeof startProcesses> | undefined;
const tracedProcesses = () => (traced ??= startProcesses({ OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint }));

describe('traces', () => {
  it(
    'follow a submission from the API request, its root, through the queue to the worker’s spam check, email and webhook delivery',
    async () => {
      const { url, api, worker } = await tracedProcesses();
      const { submissionId, deliveryId } = await submitWithWebhook(url);

      const send = await spanWithParents('smtp send', 'cfs.delivery.id', submissionId);
      const post = await spanWithParents('webhook post', 'cfs.webhook.delivery_id', deliveryId);
      const root = ancestry(send, collector.spans).at(-1)!;
      expect(root).toMatchObject({ name: 'POST /api/contact-api/', kind: SERVER, parentSpanId: undefined, service: 'contact-form-api' });
      expect(root.attributes).toMatchObject({ 'http.response.status_code': 200 });
      expect(send.service).toBe('contact-form-worker');
      expect(post.traceId).toBe(send.traceId);

      // Each span's parent is there, and the chain ends at the request: nothing dangles.
      const emailChain = ancestry(send, collector.spans);
      expect(emailChain.at(-1)).toBe(root);
      expect(emailChain.map((span) => span.name)).toContain('process deliveries');
      const webhookChain = ancestry(post, collector.spans);
      expect(webhookChain.at(-1)).toBe(root);
      expect(webhookChain.map((span) => span.name)).toContain('process webhooks');
      // The spam check ran in the submission's job, before its email.
      const job = emailChain.find((span) => span.name === 'process deliveries')!;
      expect(collector.spans.some((span) => span.name === 'spam check' && span.parentSpanId === job.spanId)).toBe(true);

      expect(api.output()).toContain(LOADED);
      expect(worker.output()).toContain(LOADED);
    },
    120_000 + 2 * SERVICE_START_WAIT_MS,
  );

  it(
    'start at the job when it carries no trace context (added by a release without tracing): it is delivered all the same',
    async () => {
      await tracedProcesses();
      const key = await h.createKey();
      const { id } = await buildSubmission(h, { key, status: 'queued' });
      // The in-process API of this file runs without tracing: its job carries no context.
      await enqueueDelivery(h.api.deps.queue, submissionJob(id));
      await eventually(
        async () =>
          (await h.sql<{ status: string }>('select email_status as status from submissions where id = $1', [id]))[0]?.status === 'sent' ? true : undefined,
        30_000,
        'the email sent',
      );
      const send = await spanWithParents('smtp send', 'cfs.delivery.id', id);
      expect(ancestry(send, collector.spans).at(-1)).toMatchObject({ name: 'process deliveries', kind: CONSUMER, parentSpanId: undefined });
    },
    60_000 + 2 * SERVICE_START_WAIT_MS,
  );

  it(
    'are off without OTEL_EXPORTER_OTLP_ENDPOINT: the API and the worker load none of the OpenTelemetry SDK',
    async () => {
      // Stopped first: they share the queues, and the jobs here are for the processes without tracing.
      if (traced) {
        const { api, worker } = await traced;
        for (const child of [api, worker]) await child.stop();
      }
      const exports = collector.requests();
      const { url, api, worker } = await startProcesses({});
      await submitWithWebhook(url);
      for (const child of [api, worker]) await child.stop();
      expect(api.output()).not.toContain(LOADED);
      expect(worker.output()).not.toContain(LOADED);
      expect(collector.requests()).toBe(exports);
    },
    120_000 + 2 * SERVICE_START_WAIT_MS,
  );
});
