// The autoresponses table, and what the decision to send one reads of the submission, its key and
// the visitor's address. The bounds are counted and the row they allow inserted under one lock per
// mailbox, in one transaction: two workers cannot both pass a bound.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { AutoresponseOutcome, AutoresponseReview } from '../../words/autoresponse-kinds.ts';
import type { SpamFilterLevel, SpamVerdict } from '../../words/spam-kinds.ts';

/** What the decision needs of a submission, its key and the visitor's address; the submission row locked. */
export type AutoresponseFacts = {
  id: string;
  key_id: string;
  email: string;
  spam_verdict: SpamVerdict | null;
  autoresponse: AutoresponseOutcome | null;
  autoresponse_enabled: boolean;
  has_content: boolean;
  spam_filter: SpamFilterLevel;
  confirmed: boolean;
  suppressed: boolean;
  /** Whether the submission came after the key's current captcha was asked for a minute already (an API's cached key lags a change by less). */
  captcha_passed: boolean;
  review: AutoresponseReview | null;
  key_created_at: Date;
  /** The key's owner, and when their oldest key was made: the owner's daily bound. */
  owner_mailbox: string;
  owner_since: Date;
};

/** The submission, locked until the transaction ends, with the facts about its key and its visitor's address; undefined when it is gone. */
export async function lockAutoresponseFacts(
  tx: EntityManager,
  submissionId: string,
  visitorMailbox: (email: string) => string,
  erasedForm: (value: string) => string,
): Promise<AutoresponseFacts | undefined> {
  const [row] = await tx.execute<Array<Omit<AutoresponseFacts, 'suppressed'>>>(
    // A test message from the owner console gets none: as if the autoresponse were off.
    `select s.id, s.key_id, s.email, s.spam_verdict, s.autoresponse, (k.autoresponse_enabled and not s.test) as autoresponse_enabled,
            (k.autoresponse_subject is not null and k.autoresponse_text is not null) as has_content, k.spam_filter,
            exists (select 1 from recipients r where r.mailbox = k.mailbox and r.confirmed_at is not null) as confirmed,
            coalesce(k.captcha is not null and k.captcha_required_since <= s.created_at - interval '1 minute', false) as captcha_passed,
            k.autoresponse_review as review, k.created_at as key_created_at, k.mailbox as owner_mailbox,
            (select min(o.created_at) from verification_keys o where o.mailbox = k.mailbox) as owner_since
       from submissions s join verification_keys k on k.id = s.key_id
      where s.id = ?
        for update of s`,
    [submissionId],
  );
  if (!row) return undefined;
  const [suppression] = await tx.execute<Array<{ suppressed: boolean }>>(
    `select exists (select 1 from address_bounces b where b.address in (?, ?) and b.suppressed_until > now())
         or exists (select 1 from mailbox_complaints c where c.mailbox in (?, ?)) as suppressed`,
    // An erased address's records are kept in their erased form (src/shared/visitors): still suppressed.
    [row.email.toLowerCase(), erasedForm(row.email), visitorMailbox(row.email), erasedForm(visitorMailbox(row.email))],
  );
  return {
    ...row,
    key_created_at: new Date(row.key_created_at),
    owner_since: new Date(row.owner_since),
    suppressed: suppression?.suppressed === true,
  };
}

/** Waits for the mailbox's lock (held until the transaction ends): its bounds are counted by one transaction at a time. */
export async function lockMailboxBounds(tx: EntityManager, mailbox: string): Promise<void> {
  await tx.execute(`select pg_advisory_xact_lock(hashtextextended(?, 0))`, [`autoresponse ${mailbox}`]);
}

/** Waits for the key owner's lock (held until the transaction ends): the owner's daily bound is counted by one transaction at a time. */
export async function lockOwnerBounds(tx: EntityManager, ownerMailbox: string): Promise<void> {
  await tx.execute(`select pg_advisory_xact_lock(hashtextextended(?, 0))`, [`autoresponse owner ${ownerMailbox}`]);
}

/** The autoresponses of the last 24 hours of this key, and of all keys of its owner's mailbox. */
export async function countDaily(tx: EntityManager, keyId: string, ownerMailbox: string): Promise<{ forKey: number; forOwner: number }> {
  const [row] = await tx.execute<Array<{ for_key: number; for_owner: number }>>(
    `select count(*) filter (where a.key_id = ?)::int as for_key, count(*)::int as for_owner
       from autoresponses a
      where a.key_id in (select k.id from verification_keys k where k.mailbox = ?) and a.created_at > now() - interval '24 hours'`,
    [keyId, ownerMailbox],
  );
  return { forKey: row?.for_key ?? 0, forOwner: row?.for_owner ?? 0 };
}

/**
 * The mailbox's autoresponses of the last 24 hours: for this key, and across all keys. Those of an
 * erased address carry the mailbox's erased form (`erasedMailbox`, src/shared/visitors) and count too.
 */
export async function countRecent(tx: EntityManager, mailbox: string, erasedMailbox: string, keyId: string): Promise<{ forKey: number; forMailbox: number }> {
  const [row] = await tx.execute<Array<{ for_key: number; for_mailbox: number }>>(
    `select count(*) filter (where key_id = ?)::int as for_key, count(*)::int as for_mailbox
       from autoresponses where mailbox in (?, ?) and created_at > now() - interval '24 hours'`,
    [keyId, mailbox, erasedMailbox],
  );
  return { forKey: row?.for_key ?? 0, forMailbox: row?.for_mailbox ?? 0 };
}

/** A new autoresponse to send (queued); its id. */
export async function insertAutoresponse(tx: EntityManager, row: { submissionId: string; keyId: string; email: string; mailbox: string }): Promise<string> {
  const [inserted] = await tx.execute<Array<{ id: string }>>(
    `insert into autoresponses (id, submission_id, key_id, email, mailbox) values (gen_random_uuid(), ?, ?, ?, ?) returning id`,
    [row.submissionId, row.keyId, row.email, row.mailbox],
  );
  return inserted!.id;
}

/** Writes what became of the submission's autoresponse. */
export async function setSubmissionOutcome(em: EntityManager, submissionId: string, outcome: AutoresponseOutcome): Promise<void> {
  await em.execute('update submissions set autoresponse = ? where id = ?', [outcome, submissionId]);
}

/** Writes the outcome of the autoresponse's own delivery on the submission it answers (none once that is deleted). */
export async function setOutcomeOfAutoresponse(em: EntityManager, autoresponseId: string, outcome: AutoresponseOutcome): Promise<void> {
  await em.execute('update submissions set autoresponse = ? where id = (select submission_id from autoresponses where id = ?)', [outcome, autoresponseId]);
}

/** What the autoresponse's email needs: the visitor's address, the key's settings and owner, the date of the submission. */
export type AutoresponseToSend = {
  email: string;
  mailbox: string;
  owner_email: string;
  owner_mailbox: string;
  label: string | null;
  enabled: boolean;
  subject: string | null;
  text: string | null;
  review: AutoresponseReview | null;
  /** The key's domains: the only hosts its text may link to. */
  domains: string[];
  received_at: Date;
  complained: boolean;
  suppressed_until: Date | null;
};

export async function findAutoresponseToSend(em: EntityManager, id: string): Promise<AutoresponseToSend | undefined> {
  const [row] = await em.execute<AutoresponseToSend[]>(
    `select a.email, a.mailbox, k.email as owner_email, k.mailbox as owner_mailbox, k.label, k.autoresponse_enabled as enabled, k.autoresponse_subject as subject, k.autoresponse_text as text,
            k.autoresponse_review as review, k.domains,
            coalesce(s.created_at, a.created_at) as received_at,
            exists (select 1 from mailbox_complaints c where c.mailbox = a.mailbox) as complained,
            (select b.suppressed_until from address_bounces b where b.address = a.email and b.suppressed_until > now()) as suppressed_until
       from autoresponses a join verification_keys k on k.id = a.key_id left join submissions s on s.id = a.submission_id
      where a.id = ?`,
    [id],
  );
  return row && { ...row, received_at: new Date(row.received_at), suppressed_until: row.suppressed_until && new Date(row.suppressed_until) };
}

/** Settled autoresponses older than `days` (at least the bounds' 24 hours); how many were deleted. */
export async function deleteOldAutoresponses(em: EntityManager, days: number): Promise<number> {
  const result = await em.execute<{ affectedRows: number }>(
    `delete from autoresponses where created_at < now() - make_interval(days => ?) and email_status not in ('queued', 'sending', 'retrying')`,
    [days],
    'run',
  );
  return result.affectedRows;
}
