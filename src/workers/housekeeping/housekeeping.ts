// The periodic jobs, in a queue of their own so they never wait behind a delivery backlog, one run
// at a time for the whole fleet (the queue's global concurrency is 1). A new periodic job is one
// more entry in `periodicJobs`.
import type { Job, Queue } from 'bullmq';
import type { Config } from '../../shared/infra/config.ts';
import type { MikroORM } from '../../shared/infra/db/orm.ts';
import type { Logger } from '../../shared/infra/log.ts';
import type { DeliveryKind } from '../../shared/deliveries/delivery-kinds.ts';
import type { HousekeepingJob } from '../../shared/infra/queues/jobs.ts';
import type { DeliveryJob } from '../../shared/deliveries/delivery-jobs.ts';
import type { Storage } from '../../shared/infra/storage.ts';
import { spamFilterFromConfig } from '../../shared/spam/spam-filter.ts';
import { teachUntaughtMarks } from '../../shared/spam/spam-teaching.ts';
import { autoresponsePolicyOf } from '../../shared/autoresponses/autoresponses.ts';
import { reconcile } from './reconcile.ts';
import { applyRetention } from './retention.ts';

/** What the periodic jobs need of the configuration: their intervals and their own settings. */
export type HousekeepingConfig = Pick<
  Config,
  | 'RECONCILE_INTERVAL_MS'
  | 'RECONCILE_AFTER_MS'
  | 'CLAIM_LEASE_MS'
  | 'RETENTION_INTERVAL_MS'
  | 'RETENTION_DAYS'
  | 'HELD_TTL_DAYS'
  | 'UNCONFIRMED_SKIPPED_TTL_DAYS'
  | 'MAIL_FROM'
  | 'SPAM_FILTER'
  | 'SPAM_FILTER_URL'
  | 'SPAM_FILTER_CONTROLLER_URL'
  | 'SPAM_FILTER_PASSWORD'
  | 'SPAM_TEACH_PER_KEY_PER_HOUR'
  | 'SPAM_TEACH_LATER_INTERVAL_MS'
  | 'AUTORESPONSES'
  | 'AUTORESPONSES_NEW_KEY_PER_DAY'
  | 'AUTORESPONSES_KEY_PER_DAY'
  | 'SECRET'
>;

/** The queue of each kind of delivery, for the reconciler. */
export type DeliveryQueues = Record<DeliveryKind['queue'], Queue<DeliveryJob>>;

export type HousekeepingDeps = { orm: MikroORM; storage: Storage; queues: DeliveryQueues; config: HousekeepingConfig; log: Logger };

type PeriodicJob = {
  name: string;
  /** Milliseconds between runs, or undefined when the job is switched off. */
  every: (config: HousekeepingConfig) => number | undefined;
  run: (deps: HousekeepingDeps) => Promise<number>;
};

/** How long the filter may take to learn one mark in the background. */
const TEACH_LATER_TIMEOUT_MS = 10_000;

export const periodicJobs: PeriodicJob[] = [
  {
    name: 'reconcile',
    every: (config) => config.RECONCILE_INTERVAL_MS,
    run: ({ orm, queues, config, log }) =>
      reconcile(orm.em.fork(), queues, log, {
        staleAfterMs: config.RECONCILE_AFTER_MS,
        claimLeaseMs: config.CLAIM_LEASE_MS,
        autoresponse: autoresponsePolicyOf(config),
      }),
  },
  {
    name: 'retention',
    // Always on: held and unconfirmed submissions expire even without RETENTION_DAYS.
    every: (config) => config.RETENTION_INTERVAL_MS,
    run: ({ orm, storage, config, log }) =>
      applyRetention(orm.em.fork(), storage, log, {
        retentionDays: config.RETENTION_DAYS,
        heldTtlDays: config.HELD_TTL_DAYS,
        unconfirmedSkippedTtlDays: config.UNCONFIRMED_SKIPPED_TTL_DAYS,
      }),
  },
  {
    name: 'spam-teach-later',
    every: (config) => (spamFilterFromConfig(config) ? config.SPAM_TEACH_LATER_INTERVAL_MS : undefined),
    run: async ({ orm, config, log }) => {
      const filter = spamFilterFromConfig(config);
      if (!filter) return 0;
      const settings = { mailFrom: config.MAIL_FROM, perKeyPerHour: config.SPAM_TEACH_PER_KEY_PER_HOUR, timeoutMs: TEACH_LATER_TIMEOUT_MS };
      return teachUntaughtMarks(orm.em.fork(), filter, settings, log);
    },
  },
];

/**
 * Upserting the same scheduler ids from every worker keeps exactly one schedule for the fleet;
 * upserting again after a reconnect restores them if Redis lost its data.
 */
export async function schedulePeriodicJobs(queue: Queue<HousekeepingJob>, deliveries: Queue<DeliveryJob>, config: HousekeepingConfig): Promise<void> {
  await queue.setGlobalConcurrency(1);
  for (const job of periodicJobs) {
    const every = job.every(config);
    if (every === undefined) await queue.removeJobScheduler(job.name);
    else await queue.upsertJobScheduler(job.name, { every }, { name: job.name, data: {} });
    // Earlier versions scheduled them in the delivery queue, behind the deliveries.
    await deliveries.removeJobScheduler(job.name);
  }
}

export function createHousekeepingProcessor(deps: HousekeepingDeps) {
  return async (job: Job<HousekeepingJob>): Promise<number> => {
    const periodic = periodicJobs.find((candidate) => candidate.name === job.name);
    if (!periodic) throw new Error(`unknown housekeeping job ${job.name}`);
    return periodic.run({ ...deps, log: deps.log.child({ job: job.name, jobId: job.id }) });
  };
}
