// The webhook job: one event of a submission POSTed to one endpoint, signed per Standard Webhooks, or
// written in a chat platform's format for a chat channel (./chat/). Claimed and
// recorded like an email (../../shared/deliveries/deliveries.ts); the receiver's answer decides: 2xx delivered; 408,
// 429, 5xx and no answer retried (honouring Retry-After) until WEBHOOK_RETRY_HORIZON_MS; anything
// else, a refused address among it, fails at once. A failure counts against the endpoint, which is
// disabled (and its owner emailed) after WEBHOOK_DISABLE_AFTER in a row.
import { DelayedError, UnrecoverableError, type Job, type Queue } from 'bullmq';
import type { EntityManager } from '@mikro-orm/postgresql';
import { AddressRefusedError, type AddressPolicy } from '../../shared/webhooks/address-guard.ts';
import { recordEndpointOutcome, findDeliveryToSend, writeCreatedEvent } from '../../shared/webhooks/webhooks.ts';
import { deliveryKinds } from '../../shared/deliveries/delivery-kinds.ts';
import type { Logger } from '../../shared/infra/log.ts';
import { deliveries, deliveryLatency, deliveryRetries } from '../../shared/infra/metrics.ts';
import { enqueueDelivery } from '../../shared/infra/queues/queues.ts';
import { keyEmailJob, type DeliveryJob, type DeliveryJobs } from '../../shared/deliveries/delivery-jobs.ts';
import { type RetryAfterError } from '../../shared/infra/queues/workers.ts';
import type { KeyVault } from '../../shared/infra/secrets.ts';
import type { Storage } from '../../shared/infra/storage.ts';
import { isFinalFailure } from '../../shared/deliveries/retry-policy.ts';
import { judgeWebhookAnswer, webhookSpamGate, type WebhookFailure } from '../../shared/webhooks/delivery-policy.ts';
import { claimRow, recordDelivered, recordFailure, recordSkipped, releaseClaim } from '../../shared/deliveries/deliveries.ts';
import type { SendOutcome } from '../delivery/send.ts';
import { claimClock, logLostClaim, stillClaimed } from '../delivery/claim-check.ts';
import { postWebhook, signedHeaders, type WebhookAnswer } from './webhook-http.ts';
import { buildPayload, StaleEventError } from './webhook-payload.ts';
import { isChatKind } from '../../shared/webhooks/chat-channels.ts';
import { loadChatNotice } from './chat/chat-notice.ts';
import { chatRequest, retryAfterInBody } from './chat/chat-request.ts';
import type { SpamVerdicts } from '../spam/spam-check.ts';
import { checkAheadOfEmail } from './webhook-spam-check.ts';
import { traced } from '../../shared/infra/tracing.ts';
import { scanSubmissionFiles, ScannerWaitError, type FileScanSettings } from '../../shared/files/files.ts';
import { findAttachments } from '../../shared/submissions/submissions.ts';

/** What webhook delivery needs of the configuration. */
export type WebhookSettings = {
  timeoutMs: number;
  retryHorizonMs: number;
  disableAfter: number;
  claimLeaseMs: number;
  linkTtlSeconds: number;
  policy: AddressPolicy;
  /** Whether the workers check submissions for spam: a `submission.created` event then waits for the verdict it carries, or checks itself. */
  spamFilterOn: boolean;
  /** PUBLIC_URL, for a chat message's link to the console. */
  publicUrl: string;
  /** TELEGRAM_API_URL: where a Telegram channel's sendMessage goes. */
  telegramApiUrl: string;
  /** The virus scan of files (src/shared/files); undefined: files are not scanned. */
  fileScan: FileScanSettings | undefined;
};

const SPAM_VERDICT_POLL_MS = 2_000;
/** How often an event waiting for the file scanner asks it again, at most. */
const SCANNER_POLL_MS = 5_000;

export type WebhookContext = WebhookSettings & {
  em: EntityManager;
  storage: Storage;
  vault: KeyVault;
  /** The email queue, for the owner's "webhook switched off" email. */
  emailQueue: Queue<DeliveryJob>;
  log: Logger;
  /** The job's lock token: a job that waits for its submission's spam verdict is moved back to delayed with it. */
  token: string | undefined;
  /** The worker process's spam check, with a filter configured: run here when the email is held up. */
  spamVerdicts: SpamVerdicts | undefined;
};

const label = { kind: deliveryKinds.webhook.metricLabel };

export async function deliverWebhook(context: WebhookContext, job: Job<DeliveryJobs['webhook']>): Promise<SendOutcome> {
  const { em } = context;
  const id = job.data.deliveryId;
  const { submissionId, endpointId } = job.data;
  // A submission queued for email: its row is written here (or by its email's claim), not by the API.
  if (submissionId && endpointId) await writeCreatedEvent(em, id, submissionId, endpointId);
  const since = claimClock();
  const claimed = await claimRow(em, 'webhook', id, context.claimLeaseMs);
  if (claimed === undefined) {
    deliveries.inc({ ...label, outcome: 'not-claimable' });
    return 'not-claimable';
  }
  const { attempt, claim } = claimed;
  const lost = (what: string): SendOutcome => {
    deliveries.inc({ ...label, outcome: 'not-claimable' });
    logLostClaim(context.log, 'webhook', id, what);
    return 'not-claimable';
  };
  let delivery = await findDeliveryToSend(em, id);
  const { endpoint } = delivery;
  let answer: WebhookAnswer | undefined;
  let failure: WebhookFailure;
  try {
    if (!endpoint.enabled) throw new DisabledEndpointError('the webhook is disabled; enable it and re-send');
    if (delivery.event === 'submission.created') {
      let spam = spamGate(context, delivery.submission);
      if (spam === 'check' && context.spamVerdicts) {
        await checkAheadOfEmail(em, context.spamVerdicts, delivery.submission.id, context.log);
        // The verdict stored, this check's or one written first: the one the email acts on too.
        em.clear();
        delivery = await findDeliveryToSend(em, id);
        spam = spamGate(context, delivery.submission);
      }
      if ((spam === 'wait' || spam === 'check') && context.token) {
        // Not an attempt: the row goes back to `queued`, the job runs again shortly.
        if (!(await releaseClaim(em, 'webhook', id, claim))) return lost('not delivered');
        await job.moveToDelayed(Date.now() + SPAM_VERDICT_POLL_MS, context.token);
        throw new DelayedError();
      }
      if (spam === 'skip') {
        if (!(await recordSkipped(em, id, claim, 'held as spam: this key sends no spam to its webhooks (marking it not spam sends it)'))) {
          return lost('not delivered, its skip not recorded');
        }
        deliveries.inc({ ...label, outcome: 'spam' });
        return 'spam';
      }
    }
    if (delivery.event === 'submission.created' && context.fileScan) {
      try {
        await scanFilesAhead(context, delivery.submission);
      } catch (error) {
        if (!(error instanceof ScannerWaitError) || !context.token) throw error;
        // Not an attempt, nor the endpoint's failure: the row goes back to `queued` until the scanner answers.
        if (!(await releaseClaim(em, 'webhook', id, claim))) return lost('not delivered');
        await job.moveToDelayed(Date.now() + Math.min(SCANNER_POLL_MS, error.retryWithinMs), context.token);
        throw new DelayedError();
      }
      // The outcomes as stored, read afresh by the payload.
      em.clear();
      delivery = await findDeliveryToSend(em, id);
    }
    const request = await buildRequest(context, delivery);
    if (!(await stillClaimed(em, 'webhook', id, claim, since, context.claimLeaseMs))) return lost('not delivered');
    answer = await traced('webhook post', { 'cfs.webhook.delivery_id': id, 'cfs.webhook.kind': endpoint.kind }, () =>
      postWebhook(request.url, request.body, request.headers, { timeoutMs: context.timeoutMs, policy: context.policy }),
    );
    if (answer.status >= 200 && answer.status < 300) {
      const sent = await recordDelivered(em, id, claim, answer.status);
      // Delivered before this worker could tell: the other worker's outcome stands.
      if (!sent) logLostClaim(context.log, 'webhook', id, 'delivered all the same, its `sent` not recorded');
      await recordEndpointOutcome(em, endpoint.id, true, context.disableAfter);
      deliveries.inc({ ...label, outcome: 'sent' });
      if (sent) deliveryLatency.observe(label, (new Date(sent.sent_at).getTime() - new Date(sent.created_at).getTime()) / 1000);
      return 'sent';
    }
    // Telegram and Discord say in the body how long to wait.
    if (isChatKind(endpoint.kind) && answer.retryAfterMs === undefined) answer.retryAfterMs = retryAfterInBody(answer.body);
    failure = judgeWebhookAnswer(answer);
  } catch (error) {
    if (error instanceof DelayedError) throw error;
    failure = {
      reason: String((error as { message?: unknown }).message ?? error).slice(0, 2000),
      // A refused address or a disabled endpoint will not change by waiting.
      permanent: error instanceof AddressRefusedError || error instanceof DisabledEndpointError || error instanceof StaleEventError,
      counts: !(error instanceof DisabledEndpointError || error instanceof StaleEventError),
    };
  }
  const status = await recordFailure(em, 'webhook', id, claim, {
    final: isFinalFailure(failure.permanent, job),
    retryHorizonMs: context.retryHorizonMs,
    maxAttempts: undefined,
    reason: failure.reason,
    responseCode: answer?.status ?? null,
  });
  if (status === undefined) return lost(`its failure (${failure.reason}) not recorded`);
  context.log.warn({ id, attempt, status, reason: failure.reason }, 'webhook delivery failed');
  if (status === 'failed') {
    deliveries.inc({ ...label, outcome: 'failed' });
    if (failure.counts) await countFailure(context, endpoint.id);
    throw new UnrecoverableError(failure.reason);
  }
  deliveries.inc({ ...label, outcome: 'retry' });
  deliveryRetries.inc(label);
  const retry: RetryAfterError = new Error(failure.reason);
  if (failure.retryAfterMs !== undefined) retry.retryAfterMs = failure.retryAfterMs;
  throw retry;
}

class DisabledEndpointError extends Error {}

/** The files of the event's submission scanned (each once, whoever comes first), before the event names them. */
async function scanFilesAhead(context: WebhookContext, submission: DeliveryToSend['submission']): Promise<void> {
  const files = await findAttachments(context.em, submission.id);
  await scanSubmissionFiles(context, context.fileScan, submission, files);
}

function spamGate(context: WebhookContext, submission: DeliveryToSend['submission']): ReturnType<typeof webhookSpamGate> {
  return webhookSpamGate(
    context.spamFilterOn,
    {
      // A test message is never checked for spam (src/api/owners/test-message.ts): nothing to wait for or check.
      keyFilter: submission.test ? 'off' : submission.key.spamFilter,
      spamToWebhooks: submission.key.spamToWebhooks,
      spamVerdict: submission.spamVerdict,
      spamMark: submission.spamMark,
      emailStatus: submission.emailStatus,
      createdAt: submission.createdAt,
    },
    Date.now(),
  );
}

type DeliveryToSend = Awaited<ReturnType<typeof findDeliveryToSend>>;

/**
 * The POST of one delivery: a generic endpoint gets the event signed per Standard Webhooks; a chat
 * channel gets the submission in its platform's format, at the URL its sealed credential gives.
 */
async function buildRequest(context: WebhookContext, delivery: DeliveryToSend): Promise<{ url: string; body: string; headers: Record<string, string> }> {
  const { endpoint } = delivery;
  if (isChatKind(endpoint.kind)) {
    // Chat channels are given new messages only (src/shared/webhooks/data/webhook-deliveries.ts).
    if (delivery.event !== 'submission.created') throw new StaleEventError(`a chat channel is not told of ${delivery.event}`);
    const notice = await loadChatNotice(context.em, delivery.submission, context.publicUrl);
    const channel = { kind: endpoint.kind, chatId: endpoint.chatId ?? null };
    return { ...chatRequest(channel, context.vault.decrypt(endpoint.secretSealed), notice, context.telegramApiUrl), headers: {} };
  }
  const body = JSON.stringify(await buildPayload(context.em, context.storage, delivery.event, delivery.submission, context.linkTtlSeconds));
  const webhookId = `${deliveryKinds.webhook.messageIdPrefix}${delivery.id}`;
  return { url: endpoint.url, body, headers: signedHeaders(context.vault.decrypt(endpoint.secretSealed), webhookId, body) };
}

/** The endpoint's failure count; when this failure disables it, the owner's email goes out (or the reconciler sends it). */
async function countFailure(context: WebhookContext, endpointId: string): Promise<void> {
  const { disabledEmailId } = await recordEndpointOutcome(context.em, endpointId, false, context.disableAfter);
  if (!disabledEmailId) return;
  context.log.warn({ endpointId }, 'webhook disabled after consecutive failures');
  await enqueueDelivery(context.emailQueue, keyEmailJob(disabledEmailId)).catch((error: unknown) =>
    context.log.warn({ err: error }, 'enqueue failed; left for the reconciler'),
  );
}
