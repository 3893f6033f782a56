// Routes each job of the delivery queue to its handler by name.
import type { Job, Queue } from 'bullmq';
import type { MikroORM } from '../shared/db/orm.ts';
import type { Logger } from '../shared/log.ts';
import type { MailTransport } from '../shared/mail.ts';
import type { DeliveryJob, DeliveryJobs } from '../shared/queue.ts';
import type { ConsentSigner } from '../shared/consent.ts';
import type { KeyVault } from '../shared/secrets.ts';
import type { Storage } from '../shared/storage.ts';
import { deliverSubmission } from './deliver.ts';
import { deliverKeyEmail } from './key-mail.ts';
import { reconcile } from './reconcile.ts';
import { applyRetention, type RetentionPolicy } from './retention.ts';
import type { SendOutcome } from './send.ts';

export type ProcessorDeps = {
  orm: MikroORM;
  transport: MailTransport;
  storage: Storage;
  vault: KeyVault;
  consent: ConsentSigner;
  unconfirmedPerHour: number;
  queue: Queue<DeliveryJob>;
  mailFrom: string;
  publicUrl: string;
  maxAttempts: number;
  attachMaxBytes: number;
  linkTtlSeconds: number;
  reconcileAfterMs: number;
  claimLeaseMs: number;
  retention: RetentionPolicy;
  log: Logger;
};

export function createDeliveryProcessor(deps: ProcessorDeps) {
  return async (job: Job<DeliveryJob>): Promise<SendOutcome | number> => {
    // One logger per job, carrying the id of the request that created the row.
    const log = deps.log.child({ job: job.name, jobId: job.id, requestId: (job.data as { requestId?: string }).requestId });
    const context = { ...deps, log, em: deps.orm.em.fork() };
    switch (job.name) {
      case 'submission':
        return deliverSubmission(context, job as Job<DeliveryJobs['submission']>);
      case 'key-email':
        return deliverKeyEmail(context, job as Job<DeliveryJobs['key-email']>);
      case 'retention':
        return applyRetention(context.em, deps.storage, log, deps.retention);
      case 'reconcile':
        return reconcile(context.em, deps.queue, log, { staleAfterMs: deps.reconcileAfterMs, claimLeaseMs: deps.claimLeaseMs });
      default:
        throw new Error(`unknown job ${job.name}`);
    }
  };
}
