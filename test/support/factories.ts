// The rows tests start from, made in one call each with defaults a test overrides: keys (sealed as
// the service seals them), submissions in any state, recipients' consent and allowances, owner
// sessions, key emails, webhook endpoints and deliveries, spam marks and teachings. Each writes one
// SQL statement, after the rows it refers to when the test gives none (a submission's key, a
// delivery's endpoint), and returns the row. The update helpers put a row the service made into
// the state a test needs (aged, claimed, expired, moved to another URL).
import { randomBytes, randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { Config } from '../../src/shared/infra/config.ts';
import { mailboxOf } from '../../src/shared/keys/consent.ts';
import type { CaptchaProvider, KeyEmailKind, KeyStatus } from '../../src/shared/keys/entities.ts';
import type { CustomFields } from '../../src/shared/submissions/entities.ts';
import type { EmailStatus } from '../../src/shared/deliveries/delivery-columns.ts';
import type { SpamMark } from '../../src/shared/words/spam-kinds.ts';
import type { WebhookEvent } from '../../src/shared/webhooks/entities.ts';
import { SESSION_TTL_DAYS, tokenHash } from '../../src/shared/owners/owners.ts';
import { createKeyVault } from '../../src/shared/infra/secrets.ts';
import type { Harness } from './harness.ts';

/** Where a factory writes: a harness, or a database the test opened itself (`onClient`). Keys and secrets are sealed under `config.SECRET`. */
export type Db = Pick<Harness, 'sql'> & { config: Pick<Config, 'SECRET'> };

/** A database the test holds a client of (in a transaction of its own, or not migrated by a harness), for the factories. */
export function onClient(client: pg.ClientBase | pg.Pool, secret: string): Db {
  return {
    sql: async (text, values) => (await client.query(text, values)).rows,
    config: { SECRET: secret },
  };
}

export type Duration = { days?: number; hours?: number; minutes?: number; seconds?: number };

/**
 * A moment on the database's clock, not this process's (DATABASE_URL may name another host): the
 * service compares times with the database's now(), so an age given this way is exact.
 */
export type DbTime = { readonly secondsFromNow: number };

const secondsOf = (d: Duration) => (d.days ?? 0) * 86_400 + (d.hours ?? 0) * 3_600 + (d.minutes ?? 0) * 60 + (d.seconds ?? 0);
export const NOW: DbTime = { secondsFromNow: 0 };
export const ago = (d: Duration): DbTime => ({ secondsFromNow: -secondsOf(d) });
export const fromNow = (d: Duration): DbTime => ({ secondsFromNow: secondsOf(d) });

type Value = DbTime | Date | string | string[] | number | boolean | null;
const isDbTime = (value: unknown): value is DbTime => typeof value === 'object' && value !== null && 'secondsFromNow' in value;

/** Query parameters, with a moment on the database's clock written as now() plus an interval. */
class Params {
  readonly values: unknown[] = [];
  add(value: Value): string {
    if (isDbTime(value)) {
      this.values.push(value.secondsFromNow);
      return `now() + make_interval(secs => $${this.values.length}::float8)`;
    }
    this.values.push(value);
    return `$${this.values.length}`;
  }
}

/** `column = value, …` of the columns given (undefined: left as it is). */
function assignments(params: Params, columns: Record<string, Value | undefined>): string {
  const set = Object.entries(columns)
    .filter(([, value]) => value !== undefined)
    .map(([column, value]) => `${column} = ${params.add(value as Value)}`);
  if (set.length === 0) throw new Error('nothing to update');
  return set.join(', ');
}

/** An id, or a row that has one (a key, a submission, an endpoint). */
type Ref = string | { id: string };
const idOf = (ref: Ref) => (typeof ref === 'string' ? ref : ref.id);
const suffix = () => randomBytes(5).toString('hex');

// ---- verification keys

export type KeyOverrides = {
  /** Kept as given (the service lower-cases what reaches it); the mailbox is derived from it. */
  email?: string;
  status?: KeyStatus;
  useDomain?: boolean;
  domains?: string[];
  captcha?: CaptchaProvider | null;
  /** The key itself; a random UUID, as the service makes, unless given. */
  value?: string;
  /** The SECRET its stored copy is sealed under, when not the database's: a copy the service cannot open. */
  sealedUnder?: string;
};

/** A key and its plain value (`key`), as a test submits with it. */
export type KeyRow = { id: string; key: string; email: string; mailbox: string; status: KeyStatus };

/** A verification key stored as the service stores one: found by its HMAC, its value sealed under SECRET (src/shared/infra/secrets.ts). */
export async function buildKey(db: Db, overrides: KeyOverrides = {}): Promise<KeyRow> {
  const vault = createKeyVault(db.config.SECRET);
  const value = overrides.value ?? randomUUID();
  const email = overrides.email ?? `owner-${suffix()}@example.test`;
  const sealer = overrides.sealedUnder === undefined ? vault : createKeyVault(overrides.sealedUnder);
  const [row] = await db.sql<{ id: string; email: string; mailbox: string; status: KeyStatus }>(
    `insert into verification_keys (id, key_hash, key_encrypted, email, mailbox, status, use_domain, domains, captcha)
     values (gen_random_uuid(), $1, $2, $3, $4, $5, $6, $7, $8) returning id, email, mailbox, status`,
    [
      vault.hash(value),
      sealer.encrypt(value),
      email,
      mailboxOf(email),
      overrides.status ?? 'active',
      overrides.useDomain ?? false,
      JSON.stringify(overrides.domains ?? []),
      overrides.captcha ?? null,
    ],
  );
  return { ...row!, key: value };
}

/** Changes a key's columns straight in PostgreSQL (the API's caches hear of it as of any change). `key`: its row, or `{ key: value }` for one made through the API. */
export async function updateKey(
  db: Db,
  key: { id: string } | { key: string },
  changes: { status?: KeyStatus; useDomain?: boolean; domains?: string[] },
): Promise<void> {
  const params = new Params();
  const set = assignments(params, {
    status: changes.status,
    use_domain: changes.useDomain,
    domains: changes.domains && JSON.stringify(changes.domains),
  });
  const where = 'id' in key ? `id = ${params.add(key.id)}` : `key_hash = ${params.add(createKeyVault(db.config.SECRET).hash(key.key))}`;
  await db.sql(`update verification_keys set ${set} where ${where}`, params.values);
}

// ---- submissions

/**
 * The delivery columns submissions, key emails and webhook deliveries share, settable on each:
 * status, attempts, claim and sent times, age. Queued, never tried, new unless given.
 */
export type DeliveryOverrides = {
  status?: EmailStatus;
  attempts?: number;
  claimedAt?: DbTime | Date | null;
  sentAt?: DbTime | Date | null;
  createdAt?: DbTime | Date;
};

/** The values of email_status, email_attempts, claimed_at, sent_at and created_at, in that order. */
const deliveryValues = (overrides: DeliveryOverrides): Value[] => [
  overrides.status ?? 'queued',
  overrides.attempts ?? 0,
  overrides.claimedAt ?? null,
  overrides.sentAt ?? null,
  overrides.createdAt ?? NOW,
];

export type SubmissionOverrides = {
  /** Its key: a row or an id; a new key unless given. */
  key?: Ref;
  email?: string;
  message?: string;
  subject?: string;
  customFields?: CustomFields;
} & DeliveryOverrides;

export type SubmissionRow = {
  id: string;
  keyId: string;
  email: string;
  message: string;
  subject: string;
  status: EmailStatus;
  attempts: number;
  createdAt: Date;
};

type RawSubmission = {
  id: string;
  key_id: string;
  email: string;
  message: string;
  subject: string;
  email_status: EmailStatus;
  email_attempts: number;
  created_at: Date;
};
const submissionRow = (row: RawSubmission): SubmissionRow => ({
  id: row.id,
  keyId: row.key_id,
  email: row.email,
  message: row.message,
  subject: row.subject,
  status: row.email_status,
  attempts: row.email_attempts,
  createdAt: row.created_at,
});

/**
 * Submissions saved as a row alone, in one statement: no job is enqueued and no file stored, as
 * when the API committed and then lost its enqueue. Returned in the order given.
 */
export async function buildSubmissions(db: Db, list: SubmissionOverrides[]): Promise<SubmissionRow[]> {
  if (list.length === 0) return [];
  const params = new Params();
  const keyIds = new Map<SubmissionOverrides, string>();
  for (const overrides of list) keyIds.set(overrides, overrides.key ? idOf(overrides.key) : (await buildKey(db)).id);
  const tuples = list.map((overrides) => {
    const values: Value[] = [
      keyIds.get(overrides)!,
      overrides.email ?? 'visitor@example.org',
      overrides.message ?? 'Hello from the contact form',
      overrides.subject ?? 'New submission',
      JSON.stringify(overrides.customFields ?? []),
      ...deliveryValues(overrides),
    ];
    return `(gen_random_uuid(), ${values.map((value) => params.add(value)).join(', ')})`;
  });
  const rows = await db.sql<RawSubmission>(
    `insert into submissions (id, key_id, email, message, subject, custom_fields, email_status, email_attempts, claimed_at, sent_at, created_at)
     values ${tuples.join(', ')}
     returning id, key_id, email, message, subject, email_status, email_attempts, created_at`,
    params.values,
  );
  return rows.map(submissionRow);
}

/** One submission row; see `buildSubmissions`. */
export async function buildSubmission(db: Db, overrides: SubmissionOverrides = {}): Promise<SubmissionRow> {
  const [row] = await buildSubmissions(db, [overrides]);
  return row!;
}

/** Puts submissions (one, or several by id) into a state: older, claimed, sent, waiting on a retry timer. Columns not given stay as they are. */
export async function updateSubmission(
  db: Db,
  submission: Ref | string[],
  changes: {
    status?: EmailStatus;
    claimedAt?: DbTime | Date | null;
    sentAt?: DbTime | Date | null;
    nextAttemptAt?: DbTime | Date | null;
    createdAt?: DbTime | Date;
  },
): Promise<void> {
  const params = new Params();
  const set = assignments(params, {
    email_status: changes.status,
    claimed_at: changes.claimedAt,
    sent_at: changes.sentAt,
    next_attempt_at: changes.nextAttemptAt,
    created_at: changes.createdAt,
  });
  const ids = params.add(Array.isArray(submission) ? submission : [idOf(submission)]);
  await db.sql(`update submissions set ${set} where id = any(${ids}::uuid[])`, params.values);
}

/** Deletes submissions a test made, so that nothing of theirs runs on into the next test. */
export async function removeSubmissions(db: Db, ids: string[]): Promise<void> {
  await db.sql('delete from submissions where id = any($1::uuid[])', [ids]);
}

// ---- key emails

export type KeyEmailOverrides = {
  /** What it says; `new-key` unless given. */
  kind?: KeyEmailKind;
  /** The key it is about: a row or an id; a new key unless given, none with null (as an `all-keys` email). */
  key?: Ref | null;
  /** Where it goes (the mailbox is derived from it): the key's address when the key is a row or new, else a new address. */
  email?: string;
} & DeliveryOverrides;

export type KeyEmailRow = { id: string; kind: KeyEmailKind; email: string; mailbox: string; keyId: string | null; status: EmailStatus; attempts: number };

/** An email to a key's owner (or to a mailbox asked to confirm) saved as a row alone: no job is enqueued. */
export async function buildKeyEmail(db: Db, overrides: KeyEmailOverrides = {}): Promise<KeyEmailRow> {
  const key = overrides.key === undefined ? await buildKey(db, overrides.email === undefined ? {} : { email: overrides.email }) : overrides.key;
  const keyEmail = key !== null && typeof key !== 'string' && 'email' in key && typeof key.email === 'string' ? key.email : undefined;
  const email = overrides.email ?? keyEmail ?? `owner-${suffix()}@example.test`;
  const params = new Params();
  const values: Value[] = [overrides.kind ?? 'new-key', email, mailboxOf(email), key === null ? null : idOf(key), ...deliveryValues(overrides)];
  const [row] = await db.sql<{
    id: string;
    kind: KeyEmailKind;
    email: string;
    mailbox: string;
    key_id: string | null;
    email_status: EmailStatus;
    email_attempts: number;
  }>(
    `insert into key_emails (id, kind, email, mailbox, key_id, email_status, email_attempts, claimed_at, sent_at, created_at)
     values (gen_random_uuid(), ${values.map((value) => params.add(value)).join(', ')})
     returning id, kind, email, mailbox, key_id, email_status, email_attempts`,
    params.values,
  );
  return {
    id: row!.id,
    kind: row!.kind,
    email: row!.email,
    mailbox: row!.mailbox,
    keyId: row!.key_id,
    status: row!.email_status,
    attempts: row!.email_attempts,
  };
}

// ---- spam marks and teachings

/**
 * The owner's mark on submissions, as the console writes it (spam_mark, spam_marked_at), and
 * optionally where its teaching stands: taught (or its place reserved) at `taughtAt`, the filter's
 * answer still awaited while `teachPending`. What is not given stays as it is.
 */
export async function buildSpamMark(
  db: Db,
  submission: Ref | string[],
  mark: { mark?: SpamMark; markedAt?: DbTime | Date; taughtAt?: DbTime | Date | null; teachPending?: boolean } = {},
): Promise<void> {
  const params = new Params();
  const set = assignments(params, {
    spam_mark: mark.mark ?? 'spam',
    spam_marked_at: mark.markedAt ?? NOW,
    spam_teach_pending: mark.teachPending,
    spam_taught_at: mark.taughtAt,
  });
  const ids = params.add(Array.isArray(submission) ? submission : [idOf(submission)]);
  await db.sql(`update submissions set ${set} where id = any(${ids}::uuid[])`, params.values);
}

/** One place of a key's hourly teaching allowance, spent at `taughtAt` (now unless given). */
export async function buildSpamTeaching(
  db: Db,
  teaching: { key: Ref; submission?: Ref | null; mark?: SpamMark; taughtAt?: DbTime | Date },
): Promise<{ id: string }> {
  const params = new Params();
  const values = [idOf(teaching.key), teaching.submission ? idOf(teaching.submission) : null, teaching.mark ?? 'spam', teaching.taughtAt ?? NOW].map((value) =>
    params.add(value),
  );
  const [row] = await db.sql<{ id: string }>(
    `insert into spam_teachings (id, key_id, submission_id, mark, taught_at) values (gen_random_uuid(), ${values.join(', ')}) returning id`,
    params.values,
  );
  return row!;
}

/** Moves every teaching of a key back by `by`: as if they had happened that much earlier. */
export async function backdateSpamTeachings(db: Db, key: Ref, by: Duration): Promise<void> {
  await db.sql('update spam_teachings set taught_at = taught_at - make_interval(secs => $2::float8) where key_id = $1', [idOf(key), secondsOf(by)]);
}

/** Moves a spam campaign vote (by the submission it came from) to another time. */
export async function updateCampaignVote(db: Db, submissionId: string, changes: { markedAt: DbTime | Date }): Promise<void> {
  const params = new Params();
  const set = assignments(params, { marked_at: changes.markedAt });
  await db.sql(`update spam_campaign_votes set ${set} where submission_id = ${params.add(submissionId)}`, params.values);
}

// ---- recipients' consent

/** A mailbox's consent: confirmed (now unless given) or, with `confirmedAt: null`, not. Replaces what the mailbox had. */
export async function buildRecipient(db: Db, recipient: { mailbox: string; confirmedAt?: DbTime | Date | null }): Promise<void> {
  const params = new Params();
  const mailbox = params.add(recipient.mailbox);
  const confirmedAt = params.add(recipient.confirmedAt === undefined ? NOW : recipient.confirmedAt);
  await db.sql(
    `insert into recipients (mailbox, confirmed_at) values (${mailbox}, ${confirmedAt})
     on conflict (mailbox) do update set confirmed_at = excluded.confirmed_at`,
    params.values,
  );
}

/** This clock hour's allowance of emails to an unconfirmed mailbox, `used` of it spent (src/shared/keys/consent.ts takeAllowance). */
export async function buildAllowance(db: Db, allowance: { mailbox: string; used: number }): Promise<void> {
  await db.sql(
    `insert into mailbox_allowances (mailbox, window_start, used) values ($1, date_trunc('hour', now()), $2)
     on conflict (mailbox, window_start) do update set used = excluded.used`,
    [allowance.mailbox, allowance.used],
  );
}

// ---- the owner console

/** A signed-in owner of `email`'s keys: `token` is the session cookie's value (owner_session). */
export async function buildOwnerSession(db: Db, session: { email: string; expiresAt?: DbTime | Date }): Promise<{ id: string; token: string; email: string }> {
  const token = randomBytes(32).toString('base64url');
  const params = new Params();
  const values = [tokenHash(token), session.email, session.expiresAt ?? fromNow({ days: SESSION_TTL_DAYS })].map((value) => params.add(value));
  const [row] = await db.sql<{ id: string; email: string }>(
    `insert into owner_sessions (id, token_hash, email, expires_at) values (gen_random_uuid(), ${values.join(', ')}) returning id, email`,
    params.values,
  );
  return { ...row!, token };
}

/** Ends every session of `email` a second ago, as time would. */
export async function expireOwnerSessions(db: Db, email: string): Promise<void> {
  await db.sql("update owner_sessions set expires_at = now() - interval '1 second' where email = $1", [email]);
}

/** Ends every sign-in link to `email` a second ago, as time would. */
export async function expireSignInLinks(db: Db, email: string): Promise<void> {
  await db.sql("update owner_sign_ins set expires_at = now() - interval '1 second' where email = $1", [email]);
}

// ---- webhooks

export type WebhookEndpointRow = { id: string; keyId: string; url: string; secret: string; enabled: boolean };

/**
 * A webhook endpoint of a key, its secret sealed under SECRET as the service seals it. The default
 * URL is a loopback port nothing listens on, which the address guard refuses unless WEBHOOK_ALLOW
 * lists it: nothing leaves the machine.
 */
export async function buildWebhookEndpoint(db: Db, endpoint: { key: Ref; url?: string; secret?: string; enabled?: boolean }): Promise<WebhookEndpointRow> {
  const secret = endpoint.secret ?? `whsec_${randomBytes(24).toString('base64')}`;
  const [row] = await db.sql<{ id: string; key_id: string; url: string; enabled: boolean }>(
    `insert into webhook_endpoints (id, key_id, url, secret_sealed, enabled) values (gen_random_uuid(), $1, $2, $3, $4) returning id, key_id, url, enabled`,
    [idOf(endpoint.key), endpoint.url ?? 'http://127.0.0.1:9/hook', createKeyVault(db.config.SECRET).encrypt(secret), endpoint.enabled ?? true],
  );
  return { id: row!.id, keyId: row!.key_id, url: row!.url, enabled: row!.enabled, secret };
}

/** Changes an endpoint's URL straight in PostgreSQL, past the rules the API checks it against. */
export async function updateWebhookEndpoint(db: Db, endpoint: Ref, changes: { url: string }): Promise<void> {
  await db.sql('update webhook_endpoints set url = $1 where id = $2', [changes.url, idOf(endpoint)]);
}

export type WebhookDeliveryOverrides = {
  /** Its endpoint: a row or an id; a new endpoint of the submission's key unless given. */
  endpoint?: Ref;
  /** The submission it reports: a row or an id; a new submission of the endpoint's key unless given. */
  submission?: Ref;
  event?: WebhookEvent;
} & DeliveryOverrides;

export type WebhookDeliveryRow = { id: string; endpointId: string; submissionId: string; event: WebhookEvent; status: EmailStatus; attempts: number };

/** The key a row belongs to, when the row says (an endpoint's or a submission's row does; an id does not). */
const keyIdOf = (ref: Ref | undefined) => (typeof ref === 'object' && 'keyId' in ref && typeof ref.keyId === 'string' ? ref.keyId : undefined);

/**
 * A delivery of a submission to a webhook endpoint saved as a row alone: no job is enqueued. A
 * missing endpoint or submission is made for the key of the one given (a new key when neither is,
 * or the one given is a bare id).
 */
export async function buildWebhookDelivery(db: Db, overrides: WebhookDeliveryOverrides = {}): Promise<WebhookDeliveryRow> {
  let keyId = keyIdOf(overrides.endpoint) ?? keyIdOf(overrides.submission);
  if (overrides.endpoint === undefined || overrides.submission === undefined) keyId ??= (await buildKey(db)).id;
  const endpoint = overrides.endpoint ?? (await buildWebhookEndpoint(db, { key: keyId! }));
  const submission = overrides.submission ?? (await buildSubmission(db, { key: keyId! }));
  const params = new Params();
  const values: Value[] = [idOf(endpoint), idOf(submission), overrides.event ?? 'submission.created', ...deliveryValues(overrides)];
  const [row] = await db.sql<{
    id: string;
    endpoint_id: string;
    submission_id: string;
    event: WebhookEvent;
    email_status: EmailStatus;
    email_attempts: number;
  }>(
    `insert into webhook_deliveries (id, endpoint_id, submission_id, event, email_status, email_attempts, claimed_at, sent_at, created_at)
     values (gen_random_uuid(), ${values.map((value) => params.add(value)).join(', ')})
     returning id, endpoint_id, submission_id, event, email_status, email_attempts`,
    params.values,
  );
  return {
    id: row!.id,
    endpointId: row!.endpoint_id,
    submissionId: row!.submission_id,
    event: row!.event,
    status: row!.email_status,
    attempts: row!.email_attempts,
  };
}

export type AutoresponseOverrides = { key: KeyRow | string; email?: string; submission?: { id: string } | string | null } & DeliveryOverrides;

/** An autoresponse row (the confirmation email to a visitor), as the worker's decision inserts one. */
export async function buildAutoresponse(db: Db, overrides: AutoresponseOverrides): Promise<{ id: string; status: EmailStatus }> {
  const email = overrides.email ?? `visitor-${suffix()}@example.test`;
  const params = new Params();
  const submission = overrides.submission === undefined || overrides.submission === null ? null : idOf(overrides.submission);
  const values: Value[] = [submission, idOf(overrides.key), email, mailboxOf(email), ...deliveryValues(overrides)];
  const [row] = await db.sql<{ id: string; email_status: EmailStatus }>(
    `insert into autoresponses (id, submission_id, key_id, email, mailbox, email_status, email_attempts, claimed_at, sent_at, created_at)
     values (gen_random_uuid(), ${values.map((value) => params.add(value)).join(', ')})
     returning id, email_status`,
    params.values,
  );
  return { id: row!.id, status: row!.email_status };
}

// ---- added recipients and their copies

export type AddedRecipientRow = { id: string; keyId: string; email: string; mailbox: string; confirmed: boolean };

/** An address added to a key (src/shared/recipients), confirmed unless told otherwise; no request to confirm is recorded. */
export async function buildKeyRecipient(
  db: Db,
  recipient: { key: Ref; email?: string; confirmed?: boolean; createdAt?: DbTime | Date },
): Promise<AddedRecipientRow> {
  const email = recipient.email ?? `colleague-${suffix()}@example.test`;
  const params = new Params();
  const values: Value[] = [
    idOf(recipient.key),
    email,
    mailboxOf(email),
    recipient.confirmed === false ? null : NOW,
    recipient.createdAt ?? ago({ seconds: 1 }),
  ];
  const [row] = await db.sql<{ id: string; key_id: string; email: string; mailbox: string; confirmed: boolean }>(
    `insert into key_recipients (id, key_id, email, mailbox, confirmed_at, created_at)
     values (gen_random_uuid(), ${values.map((value) => params.add(value)).join(', ')})
     returning id, key_id, email, mailbox, confirmed_at is not null as confirmed`,
    params.values,
  );
  return { id: row!.id, keyId: row!.key_id, email: row!.email, mailbox: row!.mailbox, confirmed: row!.confirmed };
}

export type RecipientCopyOverrides = {
  /** The submission it copies: a row; a new submission of the recipient's key unless given. */
  submission?: { id: string; keyId: string };
  /** The recipient it is for; a new confirmed one of the submission's key unless given. */
  recipient?: AddedRecipientRow;
} & DeliveryOverrides;

/** A copy of a submission's email to an added recipient, as the owner's email's worker makes one: no job is enqueued. */
export async function buildRecipientCopy(
  db: Db,
  overrides: RecipientCopyOverrides = {},
): Promise<{ id: string; submissionId: string; recipientId: string; status: EmailStatus }> {
  const keyId = overrides.submission?.keyId ?? overrides.recipient?.keyId ?? (await buildKey(db)).id;
  const submission = overrides.submission ?? (await buildSubmission(db, { key: keyId, status: 'sent' }));
  const recipient = overrides.recipient ?? (await buildKeyRecipient(db, { key: keyId }));
  const params = new Params();
  const values: Value[] = [submission.id, keyId, recipient.id, recipient.email, recipient.mailbox, ...deliveryValues(overrides)];
  const [row] = await db.sql<{ id: string; email_status: EmailStatus }>(
    `insert into recipient_copies (id, submission_id, key_id, recipient_id, email, mailbox, email_status, email_attempts, claimed_at, sent_at, created_at)
     values (gen_random_uuid(), ${values.map((value) => params.add(value)).join(', ')})
     returning id, email_status`,
    params.values,
  );
  return { id: row!.id, submissionId: submission.id, recipientId: recipient.id, status: row!.email_status };
}
