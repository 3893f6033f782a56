// Whether an authenticated submission's email goes out now, waits for its recipient's consent, or
// is not sent at all (not_email_sent). See src/shared/keys/consent.ts for the rule and its figures.
import type { EntityManager } from '@mikro-orm/postgresql';
import { type ActiveKey, claimConfirmRequest, takeAllowance, insertConfirmEmail } from '../../shared/keys/keys.ts';
import type { EmailStatus } from '../../shared/deliveries/delivery-columns.ts';
import { admissionBeforeAllowance, admissionByAllowance, secondsToNextHour } from '../../shared/keys/admission.ts';
import { errors } from '../api-errors.ts';
import type { ConsentMemory } from './consent-memory.ts';

export type Admission = {
  emailStatus: Extract<EmailStatus, 'queued' | 'held' | 'skipped'>;
  /** The "confirm to receive more" email to enqueue: its row is committed already. */
  confirmEmailId?: string;
};

/**
 * Runs inside the transaction that saves the submission, so a refused request leaves neither a
 * spent allowance nor a confirmation email behind. A confirmed mailbox gets everything. An unconfirmed one spends its hourly allowance on every
 * email and on every skipped submission that stores files (storage is a cost too); past it, emails
 * are held (and the mailbox asked, once, to confirm) while skipped submissions with files are refused.
 */
export async function admitSubmission(
  em: EntityManager,
  key: ActiveKey,
  request: { notEmailSent: boolean; fileCount: number },
  unconfirmedPerHour: number,
): Promise<Admission> {
  const known = admissionBeforeAllowance(request, key.mailboxConfirmed);
  if (known !== 'ask-allowance') return { emailStatus: known };
  const status = admissionByAllowance(request, await takeAllowance(em, key.mailbox, unconfirmedPerHour));
  if (status === 'refused') throw errors.unconfirmedFiles(secondsToNextHour());
  if (status === 'held') return { emailStatus: 'held', confirmEmailId: await requestConfirmation(em, key) };
  return { emailStatus: status };
}

/** Records the mailbox's one "confirm to receive more" email, unless it went out already. */
async function requestConfirmation(tx: EntityManager, key: ActiveKey): Promise<string | undefined> {
  if (!(await claimConfirmRequest(tx, key.mailbox))) return undefined;
  return insertConfirmEmail(tx, key);
}

/**
 * The admission when it is known without PostgreSQL: no consent needed, or a mailbox whose
 * allowance this process knows to be spent for the hour (./consent-memory.ts). Undefined when
 * admitting needs writes, and so a transaction around it and the insert.
 */
export function knownAdmission(key: ActiveKey, request: { notEmailSent: boolean; fileCount: number }, memory: ConsentMemory): Admission | undefined {
  const known = admissionBeforeAllowance(request, key.mailboxConfirmed);
  if (known !== 'ask-allowance') return { emailStatus: known };
  if (!request.notEmailSent && memory.knownHeld(key.mailbox)) return { emailStatus: 'held' };
  return undefined;
}
