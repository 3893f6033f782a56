// The queues' names, and what a job to add is. The delivery jobs' payloads (ids only) are the
// deliveries feature's: src/shared/deliveries/delivery-jobs.ts.

/**
 * The email deliveries (submissions and key emails). The name predates the other queues; it stays,
 * since renaming it would strand the jobs queued at an upgrade and the operators' dashboards.
 */
export const DELIVERY_QUEUE = 'deliveries';
/** Webhook deliveries: their own concurrency (WEBHOOK_CONCURRENCY) and backoff, never behind the SMTP breaker. */
export const WEBHOOK_QUEUE = 'webhooks';
/** The periodic jobs (reconciler, retention), apart from the deliveries so they never wait behind a backlog. */
export const HOUSEKEEPING_QUEUE = 'housekeeping';

/** The periodic jobs of the housekeeping queue carry nothing; their name says what to run. */
export type HousekeepingJob = Record<string, never>;

/** A job to add: the job id is the row's id (`rowId`), so a second add of the same row is a no-op. */
export type JobRequest<Data> = {
  name: string;
  data: Data;
  rowId: string;
  /** The trace context of the request that asked for the job, with tracing on (../tracing.ts): BullMQ carries it in the job's options. */
  trace?: string | undefined;
};
