// A rolling upgrade from the previous release, with that release's real code: its API beside this
// version's workers, and this version's API beside its workers, on the schema this version
// migrated (docs/upgrading.md, step 3). The previous release is taken from git history by its
// "Release X.Y.Z" commit and installed once under node_modules/.cache/ (test/support/previous-release.ts).
// A key with a webhook, a Slack channel and a confirmed added recipient gets bursts of submissions;
// each answered 200 must reach the owner's mailbox, the webhook receiver, the channel and the added
// recipient exactly once. The previous workers cannot post to a chat channel: they retry it, and
// this version's workers post it once they replace them, as an upgrade ends. They make no copies to
// added recipients either: this version's reconciler makes those of the submissions whose owner's
// email a previous worker sent, once its workers run.
import { QueueEvents } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HOUSEKEEPING_QUEUE } from '../../src/shared/infra/queues/jobs.ts';
import type { WorkerProcess } from '../../src/workers/worker.ts';
import { startChatStandIn, type ChatStandIn } from '../support/chat-stand-ins.ts';
import { adminRequest, submitJson } from '../support/client.ts';
import { buildKeyRecipient } from '../support/factories.ts';
import { eventually, startHarness, type Harness } from '../support/harness.ts';
import { INSTALL_TIMEOUT_MS, preparePreviousRelease, spawnPreviousApi, spawnPreviousWorker, type Release } from '../support/previous-release.ts';
import { startReceiver, type Receiver } from '../support/webhook-receiver.ts';
import type { WorkerChild } from '../support/workers.ts';

const HOST = '127.0.0.7';
const TOKEN = 'mixed-versions-admin-token-0123456789';
/** Submissions per mix, sent in concurrent bursts (the API groups the jobs of concurrent requests). */
const COUNT = 30;
const BURST = 10;
/** Every delivery of a mix, on a busy machine. */
const DELIVERED_MS = 120_000;
/** A mix: processes started, submissions, and twice the wait for their deliveries. */
const MIX_MS = 4 * 90_000;

let release: Release;
let h: Harness;
let receiver: Receiver;
let slack: ChatStandIn;
const spawned: WorkerChild[] = [];

beforeAll(async () => {
  release = await preparePreviousRelease();
  receiver = await startReceiver(HOST);
  slack = await startChatStandIn('slack', HOST);
  h = await startHarness({
    worker: false,
    env: {
      ADMIN_TOKEN: TOKEN,
      WEBHOOK_ALLOW: HOST,
      PUBLIC_URL: 'http://forms.example.test',
      RECONCILE_INTERVAL_MS: '1000',
      RECONCILE_AFTER_MS: '2000',
    },
  });
  slack.publicUrl = h.config.PUBLIC_URL;
}, INSTALL_TIMEOUT_MS + 120_000);
afterAll(async () => {
  for (const child of spawned) await child.kill();
  await h?.stop();
  await receiver?.close();
  await slack?.close();
});

type Mix = { key: { key: string; email: string }; colleague: string; markers: Map<string, string> };

/** A key with a webhook, a Slack channel and a confirmed added recipient. */
async function keyWith(): Promise<Mix> {
  const key = await h.createKey();
  const webhook = await adminRequest(h, TOKEN, 'POST', `/admin/keys/${key.key}/webhooks`, { url: receiver.url });
  expect(webhook.status, webhook.text).toBe(201);
  const channel = await adminRequest(h, TOKEN, 'POST', `/admin/keys/${key.key}/webhooks`, { kind: 'slack', url: slack.url });
  expect(channel.status, channel.text).toBe(201);
  const colleague = (await buildKeyRecipient(h, { key: key.id })).email;
  return { key, colleague, markers: new Map() };
}

/** COUNT submissions to the API at `url`, BURST at a time; each must be answered 200. Returns their ids. */
async function submitAll(url: string, mix: Mix, label: string): Promise<string[]> {
  const ids: string[] = [];
  for (let start = 0; start < COUNT; start += BURST) {
    const answers = await Promise.all(
      Array.from({ length: BURST }, async (_, i) => {
        const marker = `${label}-${start + i}-${Math.random().toString(36).slice(2)}`;
        const answer = await submitJson({ url }, { access_key: mix.key.key, email: 'visitor@example.org', message: `Hello ${marker}` });
        expect(answer.status, answer.text).toBe(200);
        const id = answer.json.submission_id as string;
        mix.markers.set(id, marker);
        return id;
      }),
    );
    ids.push(...answers);
  }
  return ids;
}

/** How many times each submission reached each place. */
function arrivals(mix: Mix, ids: string[]) {
  const mailsTo = (address: string, id: string) =>
    h.sink.messages.filter((mail) => mail.envelope.to.includes(address) && (mail.parsed.text ?? '').includes(mix.markers.get(id)!)).length;
  return ids.map((id) => ({
    id,
    owner: mailsTo(mix.key.email, id),
    copy: mailsTo(mix.colleague, id),
    webhook: receiver.received.filter((call) => (JSON.parse(call.body) as { data: { id: string } }).data.id === id).length,
    chat: slack.calls.filter((call) => call.problems.length === 0 && JSON.stringify(call.body).includes(`/owner/submissions/${id}`)).length,
  }));
}

type Kind = 'owner' | 'copy' | 'webhook' | 'chat';

/** Waits until every submission reached every place in `kinds`, then lets duplicates show before counting. */
async function expectDeliveredOnce(mix: Mix, ids: string[], kinds: Kind[]): Promise<void> {
  const missing = () => arrivals(mix, ids).filter((row) => kinds.some((kind) => row[kind] === 0));
  await eventually(async () => (missing().length === 0 ? true : undefined), DELIVERED_MS, `every submission's ${kinds.join(', ')}`).catch((error: unknown) => {
    throw new Error(`${(error as Error).message}; ${missing().length} of ${ids.length} not delivered: ${JSON.stringify(missing().slice(0, 3))}`);
  });
  // A second send of any of them would come within a reconciler run or two, by either release's worker.
  await reconcilerRuns(2);
  for (const row of arrivals(mix, ids)) for (const kind of kinds) expect(row[kind], `${kind} of ${row.id}`).toBe(1);
}

/** Resolves once `runs` runs of the reconciler, by a worker of either release, have completed from now on. */
async function reconcilerRuns(runs: number): Promise<void> {
  const connection = new Redis(h.config.REDIS_URL, { maxRetriesPerRequest: null });
  const events = new QueueEvents(HOUSEKEEPING_QUEUE, { connection, prefix: h.config.QUEUE_PREFIX });
  try {
    await events.waitUntilReady();
    let completed = 0;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${completed} of ${runs} reconciler runs completed`)), DELIVERED_MS);
      // A scheduled job's id is repeat:<scheduler>:<time>.
      events.on('completed', ({ jobId }) => {
        if (jobId.includes(':reconcile:') && ++completed >= runs) {
          clearTimeout(timer);
          resolve();
        }
      });
    });
  } finally {
    await events.close();
    connection.disconnect();
  }
}

const startWorkerHere = (): Promise<WorkerProcess> => h.startWorker();

async function stopWorkersHere(): Promise<void> {
  for (const worker of h.workers.splice(0)) await worker.shutdown.run();
}

describe(`beside the previous release`, () => {
  it(
    'its API with this version’s workers: every submission answered 200 reaches the owner, the added recipient, the webhook and the chat channel once',
    async () => {
      const mix = await keyWith();
      const api = await spawnPreviousApi(release, h.env);
      spawned.push(api);
      await startWorkerHere();
      const ids = await submitAll(api.url, mix, 'old-api');
      await expectDeliveredOnce(mix, ids, ['owner', 'copy', 'webhook', 'chat']);
      await api.stop();
      await stopWorkersHere();
    },
    MIX_MS,
  );

  it(
    'this version’s API with its workers: the owner’s email and the webhook of each are delivered once by them, the chat message and the copy to the added recipient once this version’s workers take over',
    async () => {
      const mix = await keyWith();
      const worker = await spawnPreviousWorker(release, h.env);
      spawned.push(worker);
      const ids = await submitAll(h.url, mix, 'new-api');
      await expectDeliveredOnce(mix, ids, ['owner', 'webhook']);
      // The upgrade ends: this version's worker replaces the previous one.
      await worker.stop();
      await startWorkerHere();
      await expectDeliveredOnce(mix, ids, ['owner', 'webhook', 'chat', 'copy']);
    },
    MIX_MS,
  );
});
