// What the receiver's answer means for a webhook delivery, when it is tried again, and whether a
// `submission.created` event goes now, waits for its spam verdict, checks the submission itself, or
// is not sent: the rules of
// src/workers/webhooks/deliver-webhook.ts, without I/O.
import type { Config } from '../infra/config.ts';
import type { EmailStatus } from '../deliveries/delivery-columns.ts';
import type { SpamFilterLevel, SpamMark, SpamVerdict } from '../words/spam-kinds.ts';
import { retryDelay } from '../deliveries/retry-policy.ts';

/**
 * How long a `submission.created` event waits for the verdict of its submission's email before its
 * worker checks the submission itself: about what an email takes when its queue is short, so that
 * a submission is usually checked once, by its email.
 */
export const EMAIL_VERDICT_WAIT_MS = 5_000;

/** A failed delivery: why, whether waiting could change it, whether it counts against the endpoint, and the receiver's Retry-After. */
export type WebhookFailure = { reason: string; permanent: boolean; counts: boolean; retryAfterMs?: number };

/** 408, 429 and 5xx are worth another try; 3xx (not followed) and other 4xx are not. */
export function judgeWebhookAnswer(answer: { status: number; retryAfterMs: number | undefined; body: string }): WebhookFailure {
  const retryable = answer.status === 408 || answer.status === 429 || answer.status >= 500;
  const redirect = answer.status >= 300 && answer.status < 400;
  const text = answer.body.replace(/\s+/g, ' ').trim().slice(0, 200);
  return {
    reason: `HTTP ${answer.status}${redirect ? ' (redirects are not followed)' : ''}${text ? `: ${text}` : ''}`,
    permanent: !retryable,
    counts: true,
    ...(answer.retryAfterMs !== undefined ? { retryAfterMs: answer.retryAfterMs } : {}),
  };
}

/** What the spam gate reads of a submission and its key. */
export type GatedSubmission = {
  keyFilter: SpamFilterLevel;
  /** The key sends its held spam to its webhooks too. */
  spamToWebhooks: boolean;
  spamVerdict: SpamVerdict | null | undefined;
  spamMark: SpamMark | null | undefined;
  emailStatus: EmailStatus;
  createdAt: Date;
};

/**
 * Whether a `submission.created` event goes now: it carries the spam verdict, so it waits for one.
 * The email's worker checks before it sends; while that worker holds the email (`sending`) the
 * event waits for its verdict, and when the email is held up (an attempt failed, or it has waited
 * in the queue EMAIL_VERDICT_WAIT_MS: the SMTP relay down, a backlog) the event's worker checks the
 * submission itself (`check`): no event waits on the relay, and none goes unchecked. A submission
 * whose email is not to be sent (held for consent, suppressed, skipped) is never checked. Held
 * spam goes only to the webhooks of a key that asked for it, or once its owner marks it not spam.
 * `filterOn`: the workers check for spam.
 */
export function webhookSpamGate(filterOn: boolean, submission: GatedSubmission, now: number): 'send' | 'wait' | 'check' | 'skip' {
  if (!filterOn || submission.keyFilter === 'off' || submission.spamMark === 'ham') return 'send';
  if (submission.spamVerdict === 'spam') return submission.spamToWebhooks ? 'send' : 'skip';
  if (submission.spamVerdict != null) return 'send';
  switch (submission.emailStatus) {
    case 'sending':
      return 'wait';
    case 'retrying':
      return 'check';
    case 'queued':
      return now - submission.createdAt.getTime() < EMAIL_VERDICT_WAIT_MS ? 'wait' : 'check';
    default:
      return 'send';
  }
}

/**
 * The delay before a webhook's retry number `attemptsMade`: exponential with jitter like the emails'
 * (WEBHOOK_RETRY_BACKOFF_MS doubling up to WEBHOOK_RETRY_MAX_BACKOFF_MS), but never sooner than the
 * receiver asked (its Retry-After, itself capped by the maximum backoff).
 */
export function webhookRetryDelay(
  attemptsMade: number,
  error: (Error & { retryAfterMs?: number }) | undefined,
  config: Pick<Config, 'WEBHOOK_RETRY_BACKOFF_MS' | 'WEBHOOK_RETRY_MAX_BACKOFF_MS'>,
  random: () => number = Math.random,
): number {
  const backoff = { EMAIL_RETRY_BACKOFF_MS: config.WEBHOOK_RETRY_BACKOFF_MS, EMAIL_RETRY_MAX_BACKOFF_MS: config.WEBHOOK_RETRY_MAX_BACKOFF_MS };
  const asked = Math.min(error?.retryAfterMs ?? 0, config.WEBHOOK_RETRY_MAX_BACKOFF_MS);
  return Math.max(retryDelay(attemptsMade, backoff, random), asked);
}
