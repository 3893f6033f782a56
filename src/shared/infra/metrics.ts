// Prometheus metrics (prom-client). Each process has its own registry: the API serves it at
// GET /metrics, a worker on METRICS_PORT.
import type { Queue } from 'bullmq';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { buildInfo } from './version.ts';

export const registry = new Registry();
collectDefaultMetrics({ register: registry });

// Always 1: its labels say which code each process runs, so a rolling upgrade's mix shows.
new Gauge({
  name: 'cfs_build_info',
  help: "The version this process runs (package.json's for a release, X.Y.Z+N.gHASH N commits after it) and its commit",
  labelNames: ['version', 'commit'] as const,
  registers: [registry],
}).set(buildInfo(), 1);

export const httpRequestDuration = new Histogram({
  name: 'cfs_http_request_duration_seconds',
  help: 'HTTP requests by route and status, with their latency',
  labelNames: ['method', 'route', 'status'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [registry],
});

// A few waiting is the bound at work; many, for long, means the slots are too few for the uploads.
export const uploadsWaiting = new Gauge({
  name: 'cfs_uploads_waiting',
  help: "Uploads waiting for a slot: small (a file's first 256 KB) or large (past them, UPLOAD_CONCURRENCY)",
  labelNames: ['slots'] as const,
  registers: [registry],
});

export const submissionsAccepted = new Counter({
  name: 'cfs_submissions_accepted_total',
  help: 'Submissions saved (answered 200)',
  registers: [registry],
});

export const submissionsRejected = new Counter({
  name: 'cfs_submissions_rejected_total',
  help: 'Submissions refused or discarded, by reason (an error id, or honeypot)',
  labelNames: ['reason'] as const,
  registers: [registry],
});

export const deliveries = new Counter({
  name: 'cfs_deliveries_total',
  help: 'Delivery attempts by email kind and outcome (sent, retry, failed, not-claimable)',
  labelNames: ['kind', 'outcome'] as const,
  registers: [registry],
});

export const autoresponses = new Counter({
  name: 'cfs_autoresponses_total',
  help: 'Autoresponses (confirmation emails to visitors) by outcome: pending (queued), sent, failed, or why none was sent (off, not_confirmed, spam, unchecked, filter_off, suppressed, role_address, limit_key, limit_address)',
  labelNames: ['outcome'] as const,
  registers: [registry],
});

export const deliveryRetries = new Counter({
  name: 'cfs_delivery_retries_total',
  help: 'Delivery attempts that failed transiently and will be retried',
  labelNames: ['kind'] as const,
  registers: [registry],
});

export const deliveryLatency = new Histogram({
  name: 'cfs_delivery_latency_seconds',
  help: 'Time from acceptance (row created) to `sent`',
  labelNames: ['kind'] as const,
  buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 3600],
  registers: [registry],
});

export const sentRecordDuration = new Histogram({
  name: 'cfs_delivery_sent_record_seconds',
  help: "From the SMTP server's acceptance to the `sent` status committed: the window in which a killed worker causes a duplicate",
  buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
  registers: [registry],
});

export const bounces = new Counter({
  name: 'cfs_bounces_total',
  help: 'Messages the bounce receiver took for a return path, by email kind and report type (hard, soft, delayed, complaint, ignored)',
  labelNames: ['kind', 'type'] as const,
  registers: [registry],
});

export const bounceRefusals = new Counter({
  name: 'cfs_bounce_refusals_total',
  help: 'What the bounce receiver refused, by reason (recipient: no valid return path; size; rate; connections; unavailable: not recorded, 451)',
  labelNames: ['reason'] as const,
  registers: [registry],
});

export const spamChecks = new Counter({
  name: 'cfs_spam_checks_total',
  help: 'Submissions the spam filter checked, by verdict (ham, spam; unchecked: the filter was down or slow, and the email went out)',
  labelNames: ['verdict'] as const,
  registers: [registry],
});

export const fileScans = new Counter({
  name: 'cfs_file_scans_total',
  help: 'Files the virus scan settled, by outcome (clean, infected; unscanned: clamd was down or slow past SCAN_WAIT_MS; too_large_to_scan)',
  labelNames: ['outcome'] as const,
  registers: [registry],
});

/** How many deliveries wait for the file scanner now (src/shared/files counts them: the infrastructure knows no feature). */
let scannerWaiting = () => 0;
export const countScannerWaitingWith = (count: () => number) => {
  scannerWaiting = count;
};

new Gauge({
  name: 'cfs_file_scanner_waiting',
  help: 'Submissions whose deliveries this worker holds back because clamd is down or slow: each waits up to SCAN_WAIT_MS (SCAN_UNAVAILABLE=hold: until it answers)',
  registers: [registry],
  collect() {
    this.set(scannerWaiting());
  },
});

export const reputationLookups = new Counter({
  name: 'cfs_spam_reputation_lookups_total',
  help: "DNS blocklist lookups of the spam check, by what was looked up (ip: the visitor's address; domain: a link's or the visitor's email domain) and result (listed, unlisted, refused: the list refused the resolver, timeout: no answer within SPAM_DNS_TIMEOUT_MS, error)",
  labelNames: ['kind', 'result'] as const,
  registers: [registry],
});

export const spamCheckDuration = new Histogram({
  name: 'cfs_spam_check_seconds',
  help: 'Time a worker waited for the spam filter, per submission checked (failures included)',
  // Fine around the most a check should add to an email, so that the alert on that target can be
  // read from these buckets (docs/benchmarks.md#scenarios-and-targets).
  buckets: [0.002, 0.005, 0.01, 0.02, 0.03, 0.04, 0.05, 0.075, 0.1, 0.25, 0.5, 1, 2.5],
  registers: [registry],
});

export const spamMarks = new Counter({
  name: 'cfs_spam_marks_total',
  help: "Owners' marks by mark (spam, ham) and whether the filter learned it (taught, known: nothing to learn, learned before or too short; capped: past the key's hourly allowance; failed: filter unavailable)",
  labelNames: ['mark', 'outcome'] as const,
  registers: [registry],
});

export const smtpBreakerTrips = new Counter({
  name: 'cfs_smtp_breaker_trips_total',
  help: 'Times this worker opened the SMTP circuit breaker (deliveries held until a probe succeeds)',
  registers: [registry],
});

/** Whether the fleet's SMTP circuit breaker is open, read from Redis when the metrics are scraped. */
export function registerBreakerState(read: () => Promise<boolean>): void {
  if (registry.getSingleMetric('cfs_smtp_breaker_open')) return;
  new Gauge({
    name: 'cfs_smtp_breaker_open',
    help: '1 while the SMTP circuit breaker holds deliveries (the SMTP server refuses or is unreachable)',
    registers: [registry],
    async collect() {
      const open = await read().catch(() => undefined);
      if (open !== undefined) this.set(open ? 1 : 0);
    },
  });
}

const QUEUE_STATES = ['waiting', 'active', 'delayed', 'failed'] as const;

/** Queue depth, read from Redis when the metrics are scraped: the email queue's, or the webhook queue's. */
export function registerQueueDepth(queue: Queue, name = 'cfs_queue_jobs', help = 'Jobs in the delivery queue by state'): void {
  if (registry.getSingleMetric(name)) return;
  new Gauge({
    name,
    help,
    labelNames: ['state'] as const,
    registers: [registry],
    async collect() {
      const counts = await queue.getJobCounts(...QUEUE_STATES).catch(() => undefined);
      if (!counts) return;
      for (const state of QUEUE_STATES) this.set({ state }, counts[state] ?? 0);
    },
  });
}
