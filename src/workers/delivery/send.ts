// Sending the email of one row (a submission or a key email) exactly once in the ordinary case:
// claim the row, send, record the outcome (../../shared/deliveries/deliveries.ts). Both tables share the delivery columns.
import { UnrecoverableError, type Job } from 'bullmq';
import type { EntityManager } from '@mikro-orm/postgresql';
import type Mail from 'nodemailer/lib/mailer/index.js';
import type { Logger } from '../../shared/infra/log.ts';
import { deliveries, deliveryLatency, deliveryRetries } from '../../shared/infra/metrics.ts';
import type { MailTransport } from '../../shared/infra/mail.ts';
import type { Acceptance, SentRecorder } from './sent-recorder.ts';
import { deliveryKinds, type DeliveryKindName, type KindsIn } from '../../shared/deliveries/delivery-kinds.ts';
import type { ScheduledRetryError } from '../../shared/infra/queues/workers.ts';
import { COMPLAINT_SUPPRESSION } from '../../shared/bounces/suppression.ts';
import {
  describeSendError,
  isFinalFailure,
  isPermanentSmtpFailure,
  isSmtpServerFailure,
  retryDelay,
  type RetryBackoff,
} from '../../shared/deliveries/retry-policy.ts';
import { claimRow, recordFailure, recordSuppressed, type ClaimToken, type SpamResult } from '../../shared/deliveries/deliveries.ts';
import { claimClock, logLostClaim, stillClaimed } from './claim-check.ts';
import type { ReturnPaths } from '../../shared/bounces/return-path.ts';
import { HeldAsSpamError } from '../spam/spam-check.ts';
import { traced } from '../../shared/infra/tracing.ts';
import { ScannerWaitError } from '../../shared/files/files.ts';

export type SendOutcome = 'sent' | 'not-claimable' | 'suppressed' | 'spam';

/** What the send step needs of the configuration. */
export type SendSettings = {
  /** A claim older than this belongs to a worker that died mid-send; the row may be claimed again. */
  claimLeaseMs: number;
  /** Unset: no limit; the horizon alone ends the retries. */
  maxAttempts: number | undefined;
  /** A temporary failure of a row older than this makes it `failed`. */
  retryHorizonMs: number;
  /** With BOUNCE_DOMAIN: each email's own envelope sender (VERP), so what comes back finds its row. */
  returnPaths: ReturnPaths | undefined;
  /** The retry timer after a temporary failure, chosen here so that the row can say when it ends. */
  backoff: RetryBackoff;
  /** This process in the delivery history. */
  worker: string;
};

export type SendContext = SendSettings & {
  em: EntityManager;
  transport: MailTransport;
  recorder: SentRecorder;
  log: Logger;
};

/**
 * A failure that will be retried. `smtp`: the SMTP server refused or could not be reached (not
 * storage, not the database). `retryDelayMs`: the timer its job gets (the row's next_attempt_at).
 */
export class TemporaryDeliveryError extends Error implements ScheduledRetryError {
  override name = 'TemporaryDeliveryError';
  readonly smtp: boolean;
  readonly retryDelayMs: number;
  constructor(reason: string, smtp: boolean, retryDelayMs: number) {
    super(reason);
    this.smtp = smtp;
    this.retryDelayMs = retryDelayMs;
  }
}

/** Thrown while building a message that must not be attempted: the row becomes `suppressed`. */
export class SuppressedError extends Error {
  override name = 'SuppressedError';
}

/** The row's mailbox complained: nothing more is sent to it until its owner signs in. */
export const suppressedByComplaint = () => new SuppressedError(COMPLAINT_SUPPRESSION);

/** A claimed row: its attempt number, the claim its outcome is written under, and what the claim loaded with it. */
export type Claimed<Row> = { attempt: number; claim: ClaimToken; row: Row };

/** The plain claim (claimRow), for emails that load their row themselves. */
export function claimOnly(context: SendContext, kind: KindsIn<'email'>, id: string): () => Promise<Claimed<undefined> | undefined> {
  return async () => {
    const claimed = await claimRow(context.em, kind, id, context.claimLeaseMs);
    return claimed && { ...claimed, row: undefined };
  };
}

export async function sendTracked<Row>(
  context: SendContext,
  kind: KindsIn<'email'>,
  id: string,
  job: Job,
  claim: () => Promise<Claimed<Row> | undefined>,
  /** `spam` and `autoresponse`: a submission's verdict and autoresponse outcome, recorded with its `sent`. */
  buildMessage: (
    row: Row,
    claim: ClaimToken,
  ) => Promise<{ message: Mail.Options; release?: () => void; spam?: SpamResult | undefined; autoresponse?: Acceptance['autoresponse'] }>,
): Promise<SendOutcome> {
  const label = { kind: deliveryKinds[kind].metricLabel };
  // Only one worker claims the row, so a job that runs twice sends once. A `failed` row is
  // claimable too: its job only runs again when an operator retries it on the queue dashboard
  // (nothing was sent for it, so nothing is sent twice).
  const since = claimClock();
  const claimed = await claim();
  if (claimed === undefined) {
    deliveries.inc({ ...label, outcome: 'not-claimable' });
    return 'not-claimable';
  }
  const { attempt } = claimed;
  const lost = (what: string): SendOutcome => {
    deliveries.inc({ ...label, outcome: 'not-claimable' });
    logLostClaim(context.log, kind, id, what);
    return 'not-claimable';
  };

  let release: (() => void) | undefined;
  let spam: SpamResult | undefined;
  let autoresponse: Acceptance['autoresponse'];
  let accepted: { messageId: string; response: string };
  try {
    const built = await buildMessage(claimed.row, claimed.claim);
    release = built.release;
    spam = built.spam;
    autoresponse = built.autoresponse;
    if (!(await stillClaimed(context.em, kind, id, claimed.claim, since, context.claimLeaseMs))) return lost('not sent');
    accepted = await traced('smtp send', { 'cfs.delivery.kind': kind, 'cfs.delivery.id': id }, () =>
      context.transport.sendMail(withReturnPath(context, kind, id, built.message)),
    );
  } catch (error) {
    if (error instanceof SuppressedError) {
      if (!(await recordSuppressed(context.em, kind, id, claimed.claim, error.message))) return lost('not sent, its suppression not recorded');
      deliveries.inc({ ...label, outcome: 'suppressed' });
      context.log.info({ table: deliveryKinds[kind].table, id, reason: error.message }, 'not attempted: the mailbox is suppressed');
      return 'suppressed';
    }
    if (error instanceof HeldAsSpamError) {
      // Its status is written with the verdict (../spam/spam-check.ts).
      deliveries.inc({ ...label, outcome: 'spam' });
      return 'spam';
    }
    const reason = describeSendError(error);
    // The delay BullMQ's backoff would pick for this retry (it takes this one, see createDeliveryWorker).
    // A wait for the file scanner is tried again by the end of SCAN_WAIT_MS at the latest.
    const retryDelayMs = Math.min(retryDelay(job.attemptsMade + 1, context.backoff), error instanceof ScannerWaitError ? error.retryWithinMs : Infinity);
    const status = await recordFailure(context.em, kind, id, claimed.claim, {
      final: isFinalFailure(isPermanentSmtpFailure(error), job),
      retryHorizonMs: context.retryHorizonMs,
      maxAttempts: context.maxAttempts,
      reason,
      retry: { delayMs: retryDelayMs, worker: context.worker },
    });
    if (status === undefined) return lost(`its failure (${reason}) not recorded`);
    const finalAttempt = status !== 'retrying';
    deliveries.inc({ ...label, outcome: finalAttempt ? 'failed' : 'retry' });
    if (!finalAttempt) deliveryRetries.inc(label);
    context.log.warn({ table: deliveryKinds[kind].table, id, attempt, finalAttempt, reason }, 'delivery failed');
    throw finalAttempt ? new UnrecoverableError(reason) : new TemporaryDeliveryError(reason, isSmtpServerFailure(error), retryDelayMs);
  } finally {
    release?.();
  }
  // Accepted by the SMTP server: from here the row must never become `retrying`. Should this write
  // fail, the row stays `sending` and is sent again only after CLAIM_LEASE_MS, as after a crash.
  const sent = await context.recorder.markSent(kind, id, {
    claim: claimed.claim,
    messageId: accepted.messageId,
    response: accepted.response,
    spam,
    autoresponse,
  });
  // Accepted before this worker could tell: sent twice, recorded once (the other worker's outcome stands).
  if (!sent) logLostClaim(context.log, kind, id, 'sent all the same, its `sent` not recorded');
  deliveries.inc({ ...label, outcome: 'sent' });
  if (sent) deliveryLatency.observe(label, (new Date(sent.sent_at).getTime() - new Date(sent.created_at).getTime()) / 1000);
  return 'sent';
}

/** The row's own envelope sender when BOUNCE_DOMAIN is set; From and Reply-To stay as they are. */
function withReturnPath(context: SendContext, kind: DeliveryKindName, id: string, message: Mail.Options): Mail.Options {
  if (!context.returnPaths || kind === 'webhook' || typeof message.to !== 'string') return message;
  return { ...message, envelope: { from: context.returnPaths.address(kind, id), to: message.to } };
}
