// Runs each job of the email delivery queue: the email of one row, behind the SMTP circuit breaker.
// Each job name has one handler, typed by its payload; a new kind of email is one more entry.
import type { Job, Queue } from 'bullmq';
import type { MikroORM } from '../../shared/infra/db/orm.ts';
import type { Logger } from '../../shared/infra/log.ts';
import type { MailTransport } from '../../shared/infra/mail.ts';
import { deliveryKinds, isDeliveryKind, type KindsIn } from '../../shared/deliveries/delivery-kinds.ts';
import type { DeliveryJob, DeliveryJobs } from '../../shared/deliveries/delivery-jobs.ts';

type EmailJobName = KindsIn<'email'>;
import type { ConsentSigner } from '../../shared/keys/consent.ts';
import type { KeyVault } from '../../shared/infra/secrets.ts';
import type { Storage } from '../../shared/infra/storage.ts';
import type { SmtpBreaker } from './smtp-breaker.ts';
import { deliverSubmission, type SubmissionSettings } from './submission-email.ts';
import { deliverKeyEmail, type KeyMailSettings } from './key-email.ts';
import { deliverAutoresponse, type AutoresponseSettings } from './autoresponse-email.ts';
import { deliverRecipientCopy } from './recipient-copy-email.ts';
import { TemporaryDeliveryError, type SendOutcome, type SendSettings } from './send.ts';
import type { SentRecorder } from './sent-recorder.ts';
import type { SpamChecker } from '../spam/spam-check.ts';
import type { SubmissionClaimer } from './submission-claims.ts';

export type ProcessorDeps = {
  orm: MikroORM;
  transport: MailTransport;
  recorder: SentRecorder;
  /** Claims submissions, those of concurrent jobs together. */
  claimSubmission: SubmissionClaimer;
  /** Holds a submission as spam before its email is sent (../spam/spam-check.ts). */
  spamCheck: SpamChecker;
  breaker: SmtpBreaker;
  storage: Storage;
  vault: KeyVault;
  consent: ConsentSigner;
  queue: Queue<DeliveryJob>;
  /** The webhook queue: the webhook deliveries a submission's claim writes get their jobs there. */
  webhookQueue: Queue<DeliveryJob>;
  /** What each part needs of the configuration, and nothing more. */
  send: SendSettings;
  submission: SubmissionSettings;
  keyMail: KeyMailSettings;
  autoresponse: AutoresponseSettings;
  log: Logger;
};

type EntityManager = ReturnType<MikroORM['em']['fork']>;
type JobContext = ProcessorDeps & { log: Logger };
type Handler<N extends EmailJobName> = (context: JobContext, job: Job<DeliveryJobs[N]>) => Promise<SendOutcome>;

/**
 * The job's own EntityManager, forked when the job first asks for it: a submission email without
 * files that is sent at once needs none (its claim and its `sent` have connections of their own),
 * and a fork per job is a cost paid on every email (docs/benchmarks.md#scenarios-and-targets).
 */
function withJobEm<T extends object>(context: T, orm: MikroORM): T & { em: EntityManager } {
  let em: EntityManager | undefined;
  return Object.defineProperty(context, 'em', { get: () => (em ??= orm.em.fork()), enumerable: true }) as T & { em: EntityManager };
}

const handlers: { [N in EmailJobName]: Handler<N> } = {
  submission: (context, job) => deliverSubmission(withJobEm({ ...context, ...context.send, ...context.submission }, context.orm), job),
  'key-email': (context, job) => deliverKeyEmail(withJobEm({ ...context, ...context.send, ...context.keyMail }, context.orm), job),
  autoresponse: (context, job) => deliverAutoresponse(withJobEm({ ...context, ...context.send, mailFrom: context.submission.mailFrom }, context.orm), job),
  'recipient-copy': (context, job) =>
    deliverRecipientCopy(withJobEm({ ...context, ...context.send, ...context.submission, publicUrl: context.keyMail.publicUrl }, context.orm), job),
};

/** Names of periodic jobs that an earlier version ran in this queue; they run in the housekeeping queue now. */
const MOVED = new Set(['reconcile', 'retention']);

const isEmailJob = (name: string): name is EmailJobName => isDeliveryKind(name) && deliveryKinds[name].queue === 'email';

/** BullMQ knows a job's name only as a string: this is the one place where it meets its payload type. */
function handlerFor<N extends EmailJobName>(name: N): Handler<N> {
  return handlers[name];
}

export function createDeliveryProcessor(deps: ProcessorDeps) {
  return async (job: Job<DeliveryJob>): Promise<SendOutcome | 'moved'> => {
    if (MOVED.has(job.name)) return 'moved';
    if (!isEmailJob(job.name)) throw new Error(`unknown job ${job.name}`);
    const handler = handlerFor(job.name);
    // One logger per job, carrying the id of the request that created the row.
    const log = deps.log.child({ job: job.name, jobId: job.id, requestId: job.data.requestId });
    const context = { ...deps, log };
    const admission = await deps.breaker.admit();
    try {
      const outcome = await handler(context, job as Job<DeliveryJobs[EmailJobName]>);
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
