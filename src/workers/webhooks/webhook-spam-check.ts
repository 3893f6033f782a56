// A webhook's own spam check. A `submission.created` event carries its submission's spam verdict,
// which the email's worker finds before it sends; when the email is held up (the SMTP relay down
// and its breaker holding every email, an attempt failed, a backlog) the event's worker runs the
// same check itself instead of waiting for the email (webhookSpamGate's `check`). The verdict is
// written only where none is stored, and only while no worker holds the email: whichever side
// checks first, the email and every webhook of the submission act on that one verdict, and the
// email is not checked again.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from '../../shared/infra/log.ts';
import { findSubmissionToCheck } from '../../shared/spam/samples.ts';
import { OWNER_MIN_LEARNS } from '../../shared/spam/spam-filter.ts';
import { recordSpamVerdictAhead } from '../../shared/deliveries/deliveries.ts';
import { findAttachments } from '../../shared/submissions/submissions.ts';
import type { SpamVerdicts } from '../spam/spam-check.ts';

/** Checks the submission and records the verdict unless one is there first; the caller reads the stored one. */
export async function checkAheadOfEmail(em: EntityManager, verdicts: SpamVerdicts, submissionId: string, log: Logger): Promise<void> {
  const submission = await findSubmissionToCheck(em, submissionId, OWNER_MIN_LEARNS);
  // Claimed meanwhile: its worker's check decides.
  if (!submission || submission.emailStatus === 'sending') return;
  // Read as the email reads them, oldest first: the filter is asked what the email would ask.
  const filenames = submission.attachmentCount === 0 ? [] : (await findAttachments(em, submissionId)).map((file) => file.filename);
  const decided = await verdicts(em, submission, filenames, log);
  if (!decided) return;
  const recorded = await recordSpamVerdictAhead(em, submissionId, decided.verdict, decided.scan);
  log.info({ submissionId, verdict: decided.verdict, recorded }, 'spam check by the webhook worker, the email held up');
}
