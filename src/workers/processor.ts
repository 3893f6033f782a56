// Runs each job of the delivery queue: the email of one row, behind the SMTP circuit breaker.
import type { Job, Queue } from 'bullmq';
import type { MikroORM } from '../shared/db/orm.ts';
import type { Logger } from '../shared/log.ts';
import type { MailTransport } from '../shared/mail.ts';
import type { DeliveryJob, DeliveryJobs } from '../shared/queue.ts';
import type { ConsentSigner } from '../shared/consent.ts';
import type { KeyVault } from '../shared/secrets.ts';
import type { Storage } from '../shared/storage.ts';
import type { SmtpBreaker } from './breaker.ts';
import { deliverSubmission } from './deliver.ts';
import { deliverKeyEmail } from './key-mail.ts';
import { TemporaryDeliveryError, type SendOutcome } from './send.ts';
import type { SentRecorder } from './sent-recorder.ts';

export type ProcessorDeps = {
  orm: MikroORM;
  transport: MailTransport;
  recorder: SentRecorder;
  breaker: SmtpBreaker;
  storage: Storage;
  vault: KeyVault;
  consent: ConsentSigner;
  unconfirmedPerHour: number;
  queue: Queue<DeliveryJob>;
  mailFrom: string;
  publicUrl: string;
  maxAttempts: number | undefined;
  retryHorizonMs: number;
  attachMaxBytes: number;
  linkTtlSeconds: number;
  claimLeaseMs: number;
  log: Logger;
};

export function createDeliveryProcessor(deps: ProcessorDeps) {
  return async (job: Job<DeliveryJob>): Promise<SendOutcome | 'moved'> => {
    // One logger per job, carrying the id of the request that created the row.
    const log = deps.log.child({ job: job.name, jobId: job.id, requestId: (job.data as { requestId?: string }).requestId });
    const context = { ...deps, log, em: deps.orm.em.fork() };
    let deliver: () => Promise<SendOutcome>;
    switch (job.name) {
      case 'submission':
        deliver = () => deliverSubmission(context, job as Job<DeliveryJobs['submission']>);
        break;
      case 'key-email':
        deliver = () => deliverKeyEmail(context, job as Job<DeliveryJobs['key-email']>);
        break;
      case 'reconcile':
      case 'retention':
        // Left by a version that ran the periodic jobs in this queue; they run in the housekeeping queue now.
        return 'moved';
      default:
        throw new Error(`unknown job ${job.name}`);
    }
    const admission = await deps.breaker.admit();
    try {
      const outcome = await deliver();
      if (outcome === 'sent') await deps.breaker.succeeded(admission);
      else await deps.breaker.inconclusive(admission);
      return outcome;
    } catch (error) {
      if (error instanceof TemporaryDeliveryError && error.smtp) await deps.breaker.failed(admission, String(job.id), error.message);
      else await deps.breaker.inconclusive(admission);
      throw error;
    }
  };
}
