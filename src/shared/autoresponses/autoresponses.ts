// The autoresponse: a confirmation email to the visitor who sent a submission, per key, off by
// default. Decided once per submission, after the owner's own email was sent or settled, and sent by
// a delivery job of its own (kind `autoresponse`), so it never delays or risks the owner's email.
// Anyone can ask for a key, so the owner is a stranger too, and the visitor's address is whatever
// was typed: it goes only when every rule holds. The operator allows it (AUTORESPONSES, the key's
// review); the key's mailbox confirmed it wants this service's mail; the submission passed the
// key's captcha (a stranger cannot make it fire for free) and the spam check said `ham`; the
// visitor's address is plain (no tag, no long local part: ./visitor-address.ts), neither suppressed
// nor a role address; and within the bounds, per visitor mailbox (one per key and
// AUTORESPONSES_PER_MAILBOX across keys per 24 hours) and per key and owner (./daily-bounds.ts).
// It carries the owner's words only, checked as mail before they are saved and before they are
// sent (./text-links.ts, the spam filter).
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Config } from '../infra/config.ts';
import { inTransaction } from '../infra/db/transactions.ts';
import { createErasedForm } from '../infra/secrets.ts';
import { mailboxOf } from '../keys/consent.ts';
import type { AutoresponseMode, AutoresponseOutcome } from '../words/autoresponse-kinds.ts';
import { keyDailyBound, ownerDailyBound, type DailyBoundSettings } from './daily-bounds.ts';
import { isPlainAddress } from './visitor-address.ts';
import {
  countDaily,
  countRecent,
  insertAutoresponse,
  lockAutoresponseFacts,
  lockMailboxBounds,
  lockOwnerBounds,
  setSubmissionOutcome,
  type AutoresponseFacts,
} from './data/autoresponses.ts';

/** Autoresponses per visitor mailbox per key per 24 hours. */
export const AUTORESPONSES_PER_KEY = 1;
/** Autoresponses per visitor mailbox across all keys per 24 hours. */
export const AUTORESPONSES_PER_MAILBOX = 3;
/** How long retention keeps a settled autoresponse's row: past the bounds' 24 hours, with a day to spare. */
export const AUTORESPONSE_ROWS_KEPT_DAYS = 2;

/**
 * Local parts that name a role or a system, not a person who wrote: mail to them is read by a
 * machine or a team, and answering a forged one of them is how a relay becomes a backscatter source.
 */
const ROLE_LOCAL_PARTS = new Set([
  'postmaster',
  'mailer-daemon',
  'mailerdaemon',
  'daemon',
  'noreply',
  'no-reply',
  'no_reply',
  'donotreply',
  'do-not-reply',
  'do_not_reply',
  'abuse',
  'root',
  'hostmaster',
  'webmaster',
  'security',
  'nobody',
  'bounce',
  'bounces',
  'listserv',
  'majordomo',
]);

/** Whether the address's local part (its +tag left out) is a role or a system's. */
export function isRoleAddress(email: string): boolean {
  const mailbox = mailboxOf(email);
  const local = mailbox.slice(0, mailbox.lastIndexOf('@'));
  // A mailing list's command address (list-request@) answers mail by machine too.
  return ROLE_LOCAL_PARTS.has(local) || local.endsWith('-request');
}

/** The operator's settings: AUTORESPONSES and the daily bounds. */
/** `erasedForm`: the form an erased address's records are kept in (src/shared/infra/secrets.ts createErasedForm), which the suppression and the bounds also match. */
export type AutoresponsePolicy = DailyBoundSettings & { mode: AutoresponseMode; erasedForm: (value: string) => string };

/** The policy as the configuration sets it, for every process that decides or sends an autoresponse. */
export function autoresponsePolicyOf(
  config: Pick<Config, 'AUTORESPONSES' | 'AUTORESPONSES_NEW_KEY_PER_DAY' | 'AUTORESPONSES_KEY_PER_DAY' | 'SECRET'>,
): AutoresponsePolicy {
  return {
    mode: config.AUTORESPONSES,
    newKeyPerDay: config.AUTORESPONSES_NEW_KEY_PER_DAY,
    keyPerDay: config.AUTORESPONSES_KEY_PER_DAY,
    erasedForm: createErasedForm(config.SECRET),
  };
}

/** Why no autoresponse goes out for these facts, the bounds aside; undefined when it may. */
export function refusal(facts: Omit<AutoresponseFacts, 'id' | 'key_id' | 'autoresponse'>, mode: AutoresponseMode): AutoresponseOutcome | undefined {
  if (!facts.autoresponse_enabled || !facts.has_content) return 'off';
  if (mode === 'off' || facts.review === 'blocked') return 'operator_off';
  if (mode === 'approval' && facts.review !== 'approved') return 'not_approved';
  if (!facts.confirmed) return 'not_confirmed';
  if (!facts.captcha_passed) return 'no_captcha';
  if (facts.spam_filter === 'off') return 'filter_off';
  if (facts.spam_verdict === 'spam') return 'spam';
  if (facts.spam_verdict !== 'ham') return 'unchecked';
  if (!facts.email.includes('@') || isRoleAddress(facts.email)) return 'role_address';
  if (!isPlainAddress(facts.email)) return 'unusual_address';
  if (facts.suppressed) return 'suppressed';
  return undefined;
}

/**
 * The outcome known from the key alone, before the owner's email is sent: `off` for a key that sends
 * no autoresponse (refusal's first rule, whatever the other facts), written with the email's `sent`
 * instead of in a transaction of its own. Undefined: decided after the owner's email, by
 * decideAutoresponse.
 */
export function outcomeFromKey(key: { autoresponseOn: boolean }): AutoresponseOutcome | undefined {
  return key.autoresponseOn ? undefined : 'off';
}

/** The decision: the outcome written on the submission, and the autoresponse to enqueue when one is to go. */
export type AutoresponseDecision = { outcome: AutoresponseOutcome; autoresponseId?: string };

/**
 * Decides the submission's autoresponse once (a second run finds it decided and changes nothing):
 * writes the outcome on the submission and, when one is to go, inserts its row, under the visitor
 * mailbox's lock so that the bounds are counted and taken in one step. Undefined when the submission
 * is gone or was decided before.
 */
export async function decideAutoresponse(em: EntityManager, submissionId: string, policy: AutoresponsePolicy): Promise<AutoresponseDecision | undefined> {
  return inTransaction(em, async (tx) => {
    const facts = await lockAutoresponseFacts(tx, submissionId, mailboxOf, policy.erasedForm);
    // Gone, or decided by an earlier run of the job.
    if (facts?.autoresponse !== null) return undefined;
    const decision = await decide(tx, facts, policy);
    await setSubmissionOutcome(tx, submissionId, decision.outcome);
    return decision;
  });
}

async function decide(tx: EntityManager, facts: AutoresponseFacts, policy: AutoresponsePolicy): Promise<AutoresponseDecision> {
  const refused = refusal(facts, policy.mode);
  if (refused) return { outcome: refused };
  const approved = facts.review === 'approved';
  const now = new Date();
  const bounds = { key: keyDailyBound(facts.key_created_at, now, approved, policy), owner: ownerDailyBound(facts.owner_since, now, approved, policy) };
  const overDaily = (daily: { forKey: number; forOwner: number }): AutoresponseOutcome | undefined =>
    daily.forKey >= bounds.key ? 'limit_key_day' : daily.forOwner >= bounds.owner ? 'limit_owner_day' : undefined;
  // A key at its bound is refused before the locks, which only a send needs: a flood of its
  // submissions does not make its owner's other decisions wait in turn.
  const atBound = overDaily(await countDaily(tx, facts.key_id, facts.owner_mailbox));
  if (atBound) return { outcome: atBound };
  const mailbox = mailboxOf(facts.email);
  // Always the owner's lock first, then the visitor's: two deciders never wait for each other in turn.
  await lockOwnerBounds(tx, facts.owner_mailbox);
  await lockMailboxBounds(tx, mailbox);
  const recent = await countRecent(tx, mailbox, policy.erasedForm(mailbox), facts.key_id);
  if (recent.forKey >= AUTORESPONSES_PER_KEY) return { outcome: 'limit_key' };
  if (recent.forMailbox >= AUTORESPONSES_PER_MAILBOX) return { outcome: 'limit_address' };
  // Counted again under the owner's lock: what the decision allows is taken in one step.
  const overNow = overDaily(await countDaily(tx, facts.key_id, facts.owner_mailbox));
  if (overNow) return { outcome: overNow };
  const autoresponseId = await insertAutoresponse(tx, { submissionId: facts.id, keyId: facts.key_id, email: facts.email, mailbox });
  return { outcome: 'pending', autoresponseId };
}

export { renderAutoresponse, type RenderedAutoresponse } from './render.ts';
export { deleteOldAutoresponses, findAutoresponseToSend, setOutcomeOfAutoresponse, type AutoresponseToSend } from './data/autoresponses.ts';
export { AUTORESPONSE_OUTCOMES, type AutoresponseOutcome } from '../words/autoresponse-kinds.ts';
