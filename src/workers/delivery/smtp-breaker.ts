// The SMTP circuit breaker. When the SMTP server refuses or is unreachable for everyone, spending
// every message's attempts on it only grows their backoff; instead the fleet stops taking delivery
// jobs (BullMQ's manual rate limit on the delivery queue) and lets one job at a time try the server,
// every SMTP_PROBE_INTERVAL_MS. The first success closes the breaker and lifts the limit, and the
// backlog drains, within HELD_WORKER_RECHECK_MS on every worker. Held jobs go back to the queue
// without an attempt, so they keep their place; the jobs that failed during the outage and wait on
// a retry timer are flushed, paced (`onClose`, src/shared/deliveries/retry-flush.ts), rather than
// left to wait up to EMAIL_RETRY_MAX_BACKOFF_MS.
//
// It opens after SMTP_BREAKER_THRESHOLD consecutive temporary SMTP failures in one worker process
// (refused or dropped connections, timeouts, 4xx replies) of at least two messages: a single message
// that keeps failing (its recipient greylists it, say) does not open it. Its state lives in Redis
// (src/shared/submissions/smtp-breaker-state.ts), so one worker's finding holds for the fleet.
import { Worker, type Queue } from 'bullmq';
import type { Logger } from '../../shared/infra/log.ts';
import { smtpBreakerTrips } from '../../shared/infra/metrics.ts';
import type { DeliveryJob } from '../../shared/deliveries/delivery-jobs.ts';
import type { RedisClient } from '../../shared/infra/queues/redis.ts';
import { breakerKey, probeKey } from '../../shared/submissions/smtp-breaker-state.ts';

export type BreakerOptions = {
  prefix: string;
  threshold: number;
  probeIntervalMs: number;
  /** Run in the background by the worker whose probe closed the breaker: once for the fleet. */
  onClose?: () => Promise<void>;
};
/** How a job was let through: normally, or as the one probe while the breaker is open. */
export type Admission = 'closed' | 'probe';

/**
 * A worker held by the breaker's rate limit sleeps at most this long before it asks the queue again
 * (BullMQ's `maximumRateLimitDelay`). Lifting the limit cannot wake a sleeping worker, in this or
 * another process; without this cap it would sleep out the probe interval it was given. The cost
 * while the breaker is open: one Redis script per worker and this interval, and no job taken.
 */
export const HELD_WORKER_RECHECK_MS = 1_000;

export class SmtpBreaker {
  /** Temporary failures since the last success in this process, and of which messages. */
  private failures = 0;
  private readonly failing = new Set<string>();
  /**
   * Until then the breaker is known closed without asking Redis (one command less per email). A
   * stale answer costs little: whoever opens the breaker also rate-limits the queue, so this worker
   * fetches nothing more meanwhile.
   */
  private closedUntil = 0;
  private readonly redis: RedisClient;
  private readonly queue: Queue<DeliveryJob>;
  private readonly options: BreakerOptions;
  private readonly log: Logger;

  constructor(redis: RedisClient, queue: Queue<DeliveryJob>, options: BreakerOptions, log: Logger) {
    this.redis = redis;
    this.queue = queue;
    this.options = options;
    this.log = log;
  }

  /** Before a delivery. While the breaker is open, only the probe passes; any other job is put back. */
  async admit(): Promise<Admission> {
    if (Date.now() < this.closedUntil) return 'closed';
    if (!(await this.redis.exists(breakerKey(this.options.prefix)))) {
      this.closedUntil = Date.now() + Math.min(1_000, this.options.probeIntervalMs / 2);
      return 'closed';
    }
    const token = await this.redis.set(probeKey(this.options.prefix), '1', 'PX', this.options.probeIntervalMs, 'NX');
    if (token === 'OK') return 'probe';
    const wait = await this.redis.pttl(probeKey(this.options.prefix));
    await this.queue.rateLimit(wait > 0 ? wait : this.options.probeIntervalMs);
    // The probe may have closed the breaker and lifted the limit since the first read: the limit
    // just set would then hold the fleet for a probe interval with the breaker closed. Read after
    // the limit was set, a close that this misses lifts the limit after it.
    if (!(await this.redis.exists(breakerKey(this.options.prefix)))) {
      await this.queue.removeRateLimitKey();
      return 'closed';
    }
    // Back to the waiting list without counting an attempt; the worker fetches nothing until the limit ends.
    throw Worker.RateLimitError();
  }

  /** The SMTP server accepted a message: a probe's success closes the breaker for the fleet. */
  async succeeded(admission: Admission): Promise<void> {
    this.failures = 0;
    this.failing.clear();
    if (admission !== 'probe') return;
    const closed = await this.redis.del(breakerKey(this.options.prefix));
    await this.redis.del(probeKey(this.options.prefix));
    await this.queue.removeRateLimitKey();
    if (!closed) return;
    this.log.warn('SMTP server answers again: circuit breaker closed, deliveries resume');
    // Not awaited: the probe's job is done, and the flush may take a while behind a long backlog.
    void this.options.onClose?.().catch((error: unknown) => this.log.warn({ err: error }, 'could not flush the retry timers after the outage'));
  }

  /** The row could not be claimed: nothing was learnt, so let the next job probe at once. */
  async inconclusive(admission: Admission): Promise<void> {
    if (admission === 'probe') await this.redis.del(probeKey(this.options.prefix));
  }

  /** A temporary SMTP failure of message `id`. */
  async failed(admission: Admission, id: string, reason: string): Promise<void> {
    this.failures += 1;
    this.failing.add(id);
    const serverWide = this.failures >= this.options.threshold && (this.failing.size >= 2 || this.options.threshold === 1);
    if (admission !== 'probe' && !serverWide) return;
    const failures = this.failures;
    this.closedUntil = 0;
    // Counted afresh once the breaker closes again.
    this.failures = 0;
    this.failing.clear();
    const key = breakerKey(this.options.prefix);
    // In one transaction: a reader never sees the breaker open without its reason.
    const written = await this.redis.multi().hsetnx(key, 'since', new Date().toISOString()).hset(key, 'reason', reason.slice(0, 500)).exec();
    const opened = written?.[0]?.[1] === 1;
    // The next probe comes after the interval; until then no worker takes a delivery job.
    await this.redis.set(probeKey(this.options.prefix), '1', 'PX', this.options.probeIntervalMs);
    await this.queue.rateLimit(this.options.probeIntervalMs);
    if (opened) {
      smtpBreakerTrips.inc();
      this.log.error({ reason, failures }, 'SMTP server failing for every message: circuit breaker open, probing');
    }
  }
}
