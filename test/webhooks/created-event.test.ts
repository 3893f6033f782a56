// The webhook deliveries of a submission queued for email. The API writes them with the submission
// and queues a plain job for each (the previous release's workers deliver a webhook only from its
// row: docs/upgrading.md). The workers can also write one themselves, from a job naming the
// submission and the endpoint (the reconciler's, for a delivery not written), and so does the
// claim of the email, which adds the job of any delivery whose own job was lost: the row's id is
// fixed by the submission and the endpoint, so each delivery is written once and sent once,
// whichever comes first. When no job was queued for it at all, the reconciler adds the webhook job
// itself, without waiting for the email.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildSubmission, buildWebhookDelivery, buildWebhookEndpoint } from '../support/factories.ts';
import { eventually, postJson, startHarness, type Harness } from '../support/harness.ts';
import { startReceiver, type Receiver } from '../support/webhook-receiver.ts';
import { createdEventId } from '../../src/shared/webhooks/created-event-id.ts';
import { enqueueDelivery } from '../../src/shared/infra/queues/queues.ts';
import { createdEventJob, submissionJob } from '../../src/shared/deliveries/delivery-jobs.ts';
import { createLogger } from '../../src/shared/infra/log.ts';
import { RECONCILE_BATCH } from '../../src/workers/housekeeping/reconcile.ts';
import { enqueueUnwrittenWebhooks } from '../../src/workers/housekeeping/unwritten-webhooks.ts';

let h: Harness;
let receiver: Receiver;

beforeAll(async () => {
  // The reconciler would write a lost delivery too (test/faults/webhooks-smtp-outage.test.ts): kept
  // out here, so that only the webhook job or the email's claim can.
  h = await startHarness({ env: { WEBHOOK_ALLOW: '127.0.0.2', RECONCILE_AFTER_MS: '600000' }, worker: false });
  receiver = await startReceiver('127.0.0.2');
});
afterAll(async () => {
  await receiver?.close();
  await h?.stop();
});

const deliveryRows = (submissionId: string) =>
  h.sql<{ id: string; endpoint_id: string; email_status: string }>('select id, endpoint_id, email_status from webhook_deliveries where submission_id = $1', [
    submissionId,
  ]);
const postsOf = (submissionId: string) => receiver.received.filter((call) => JSON.parse(call.body).data.id === submissionId);

describe('the webhook deliveries of a submission queued for email', () => {
  it('are written by the API with the submission, each with a plain job of its own, and sent once each', async () => {
    const key = await h.createKey();
    const endpoint = await buildWebhookEndpoint(h, { key, url: receiver.url });
    const ids = await Promise.all(
      ['one', 'two', 'three'].map(async (message) => {
        const answer = await postJson(`${h.url}/api/contact-api/`, { access_key: key.key, email: 'visitor@example.org', message });
        expect(answer.status).toBe(200);
        expect(answer.json.email_status).toBe('queued');
        return answer.json.submission_id as string;
      }),
    );
    // No worker runs yet: each delivery is there, under its fixed id, and its job names that row alone.
    const queue = h.api.deps.webhookQueue;
    for (const id of ids) {
      const deliveryId = createdEventId(id, endpoint.id);
      expect(await deliveryRows(id)).toEqual([{ id: deliveryId, endpoint_id: endpoint.id, email_status: 'queued' }]);
      expect((await queue.getJob(deliveryId))?.data).toEqual({ deliveryId, requestId: expect.any(String) });
    }

    await h.startWorker();
    for (const id of ids) {
      await eventually(async () => ((await deliveryRows(id))[0]?.email_status === 'sent' ? true : undefined), 20_000, `the webhook of ${id} sent`);
    }
    await h.sink.waitFor(3);
    for (const id of ids) expect(postsOf(id)).toHaveLength(1);
  });

  it('are written by a worker, from a job naming the submission and the endpoint or from the claim when that job was lost, and sent once each', async () => {
    if (h.workers.length === 0) await h.startWorker();
    const key = await h.createKey();
    const endpoint = await buildWebhookEndpoint(h, { key, url: receiver.url });
    // Saved without their deliveries, as an API that leaves them to the workers would.
    const kept = (await buildSubmission(h, { key, status: 'queued' })).id;
    const lost = (await buildSubmission(h, { key, status: 'queued' })).id;
    const emails = h.sink.messages.length;
    await enqueueDelivery(h.api.deps.webhookQueue, createdEventJob(kept, { id: createdEventId(kept, endpoint.id), endpointId: endpoint.id }));
    for (const id of [kept, lost]) await enqueueDelivery(h.api.deps.queue, submissionJob(id));

    // The reconciler leaves rows younger than 10 minutes: only the claim can have written the lost one.
    for (const id of [kept, lost]) {
      await eventually(async () => ((await deliveryRows(id))[0]?.email_status === 'sent' ? true : undefined), 20_000, `the webhook of ${id} sent`);
    }
    await h.sink.waitFor(emails + 2);
    for (const id of [kept, lost]) {
      expect(await deliveryRows(id)).toEqual([{ id: createdEventId(id, endpoint.id), endpoint_id: endpoint.id, email_status: 'sent' }]);
      expect(postsOf(id)).toHaveLength(1);
    }
  });

  it('are not written again for a submission whose delivery was written at intake, under another id, by an earlier version', async () => {
    if (h.workers.length === 0) await h.startWorker();
    const key = await h.createKey();
    const endpoint = await buildWebhookEndpoint(h, { key, url: receiver.url });
    const submission = await buildSubmission(h, { key, status: 'queued' });
    const earlier = await buildWebhookDelivery(h, { endpoint, submission, status: 'sent' });
    const emails = h.sink.messages.length;
    await enqueueDelivery(h.api.deps.queue, submissionJob(submission.id));
    await h.sink.waitFor(emails + 1);
    await eventually(async () =>
      (await h.sql<{ email_status: string }>('select email_status from submissions where id = $1', [submission.id]))[0]?.email_status === 'sent'
        ? true
        : undefined,
    );
    expect(await deliveryRows(submission.id)).toEqual([{ id: earlier.id, endpoint_id: endpoint.id, email_status: 'sent' }]);
    expect(postsOf(submission.id)).toHaveLength(0);
  });

  it('are written and sent by the reconciler when no job was queued for them: once each, and only where the claim would write them', async () => {
    if (h.workers.length === 0) await h.startWorker();
    const queue = h.api.deps.webhookQueue;
    const key = await h.createKey();
    const endpoint = await buildWebhookEndpoint(h, { key, url: receiver.url });
    await buildWebhookEndpoint(h, { key, url: receiver.url, enabled: false });
    // None of these has a job for its email or its webhooks.
    const lost = await buildSubmission(h, { key, status: 'queued' });
    const waiting = await buildSubmission(h, { key, status: 'queued' });
    const claimed = await buildSubmission(h, { key, status: 'retrying', attempts: 1 });
    const earlier = await buildSubmission(h, { key, status: 'queued' });
    const written = await buildWebhookDelivery(h, { endpoint, submission: earlier, status: 'sent' });
    // Added after them all: it gets none of them.
    await buildWebhookEndpoint(h, { key, url: receiver.url });
    const run = () => enqueueUnwrittenWebhooks(h.orm.em.fork(), queue, createLogger('test', 'silent'), 0, RECONCILE_BATCH);

    // One has its webhook job waiting in the queue already: it is left to that job.
    const waitingId = createdEventId(waiting.id, endpoint.id);
    await queue.pause();
    try {
      await enqueueDelivery(queue, createdEventJob(waiting.id, { id: waitingId, endpointId: endpoint.id }));
      const job = await queue.getJob(waitingId);
      expect(await run()).toBe(1);
      expect((await queue.getJob(waitingId))?.timestamp).toBe(job?.timestamp);
    } finally {
      await queue.resume();
    }

    for (const id of [lost.id, waiting.id]) {
      await eventually(async () => ((await deliveryRows(id))[0]?.email_status === 'sent' ? true : undefined), 20_000, `the webhook of ${id} sent`);
      expect(await deliveryRows(id)).toEqual([{ id: createdEventId(id, endpoint.id), endpoint_id: endpoint.id, email_status: 'sent' }]);
      expect(postsOf(id)).toHaveLength(1);
    }
    // A claimed submission's deliveries were its claim's to write; one written under another id stays the only one.
    expect(await deliveryRows(claimed.id)).toEqual([]);
    expect(await deliveryRows(earlier.id)).toEqual([{ id: written.id, endpoint_id: endpoint.id, email_status: 'sent' }]);
    expect(postsOf(earlier.id)).toHaveLength(0);
    expect(await run()).toBe(0);
  });
});
