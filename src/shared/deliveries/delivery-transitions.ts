// Every change of a delivery status, as data: which event may move a row of which kind from which
// status, and to which. It describes what the statements do (src/shared/deliveries/data/claims.ts, outcomes.ts, releases.ts
// builds each statement's status guard and target from it), not an ideal: a few writes are not
// guarded by the row's status at all (a worker's outcome, a report that came back) and say so with
// `any`; a worker's outcome is guarded by its claim instead (`own-claim`). docs/architecture.md
// ("Delivery statuses") lists the same rows; test/workers/delivery-transitions.test.ts walks them
// against PostgreSQL, and test/unit/deliveries/delivery-transitions.test.ts checks the page.
import { EMAIL_STATUSES, type EmailStatus } from './delivery-columns.ts';
import type { DeliveryKindName } from './delivery-kinds.ts';
import { AWAITING_JOB, CLAIMABLE, HELD, IN_FLIGHT, QUEUED, REPORTED, RESENDABLE } from './delivery-statuses.ts';

/** What happened to a row, in the words of the code that records it. */
export const DELIVERY_EVENTS = [
  'claim',
  'retry',
  'give-up',
  'suppress',
  'spam-verdict',
  'spam-verdict-ahead',
  'sent',
  'delivered',
  'skip',
  'release-claim',
  'requeue-for-resend',
  'release-held',
  'bounce',
  'complain',
  'mark-not-spam',
] as const;
export type DeliveryEvent = (typeof DELIVERY_EVENTS)[number];

/**
 * A condition on the row besides its status: `claim-expired`, its claim is older than
 * CLAIM_LEASE_MS (its worker died); `own-claim`, its claim is still the one the writer took (its
 * claimed_at unchanged), so a worker that outlived its lease, whose row another worker claimed
 * since, records nothing over that worker's outcome.
 */
export type TransitionCondition = 'claim-expired' | 'own-claim';

/** One line of the table: `event` moves a row of each of `kinds` from each of `from` to `to` (`same`: it keeps its status). */
type Line = {
  readonly kinds: readonly DeliveryKindName[];
  readonly from: readonly EmailStatus[];
  readonly event: DeliveryEvent;
  readonly to: EmailStatus | 'same';
  readonly onlyIf?: TransitionCondition;
};

const ALL = ['submission', 'key-email', 'autoresponse', 'recipient-copy', 'webhook'] as const;
const EMAILS = ['submission', 'key-email', 'autoresponse', 'recipient-copy'] as const;
const anyBut = (...except: readonly EmailStatus[]): EmailStatus[] => EMAIL_STATUSES.filter((status) => !except.includes(status));

/** The table, a line per (kinds, from statuses, event, to): the rows below are its lines spelled out. */
export const TRANSITION_LINES = [
  // A worker takes the row (the claim is a compare-and-set, so one worker sends it).
  { kinds: ALL, from: CLAIMABLE, event: 'claim', to: IN_FLIGHT },
  { kinds: ALL, from: [IN_FLIGHT], event: 'claim', to: IN_FLIGHT, onlyIf: 'claim-expired' },
  // The worker's outcome, written only while the row is still its claim (whatever its status now).
  { kinds: ALL, from: EMAIL_STATUSES, event: 'retry', to: 'retrying', onlyIf: 'own-claim' },
  { kinds: ALL, from: EMAIL_STATUSES, event: 'give-up', to: 'failed', onlyIf: 'own-claim' },
  { kinds: EMAILS, from: [IN_FLIGHT], event: 'suppress', to: 'suppressed', onlyIf: 'own-claim' },
  { kinds: ['submission'], from: [IN_FLIGHT], event: 'spam-verdict', to: 'spam', onlyIf: 'own-claim' },
  // A webhook's worker checked the submission while no worker held its email (src/workers/webhooks/webhook-spam-check.ts).
  { kinds: ['submission'], from: AWAITING_JOB, event: 'spam-verdict-ahead', to: 'spam' },
  // A report that came back before `sent` was written keeps its status.
  { kinds: EMAILS, from: anyBut(...REPORTED), event: 'sent', to: 'sent', onlyIf: 'own-claim' },
  { kinds: EMAILS, from: REPORTED, event: 'sent', to: 'same', onlyIf: 'own-claim' },
  { kinds: ['webhook'], from: EMAIL_STATUSES, event: 'delivered', to: 'sent', onlyIf: 'own-claim' },
  { kinds: ['webhook'], from: [IN_FLIGHT], event: 'skip', to: 'skipped', onlyIf: 'own-claim' },
  { kinds: ['webhook'], from: [IN_FLIGHT], event: 'release-claim', to: QUEUED, onlyIf: 'own-claim' },
  // The owner's or the operator's re-send.
  { kinds: ['submission', 'recipient-copy', 'webhook'], from: RESENDABLE, event: 'requeue-for-resend', to: QUEUED },
  // The recipient confirmed: the key's mailbox (src/shared/keys/consent.ts), or an added address (src/shared/recipients).
  { kinds: ['submission', 'recipient-copy'], from: [HELD], event: 'release-held', to: QUEUED },
  // src/shared/bounces/record.ts: a hard bounce, an abuse complaint.
  { kinds: EMAILS, from: anyBut(...REPORTED), event: 'bounce', to: 'bounced' },
  { kinds: EMAILS, from: anyBut('complained'), event: 'complain', to: 'complained' },
  // The owner's "not spam": the submission is emailed, and the webhook events held back with it go out.
  { kinds: ['submission'], from: ['spam'], event: 'mark-not-spam', to: QUEUED },
  { kinds: ['webhook'], from: ['skipped'], event: 'mark-not-spam', to: QUEUED },
] as const satisfies readonly Line[];

/** The kinds of row `event` applies to: the owner module's functions take only these. */
export type KindFor<E extends DeliveryEvent> = Extract<(typeof TRANSITION_LINES)[number], { event: E }>['kinds'][number];

/** One row of the table. */
export type Transition = { kind: DeliveryKindName; from: EmailStatus; event: DeliveryEvent; to: EmailStatus; onlyIf?: TransitionCondition };

export const TRANSITIONS: readonly Transition[] = (TRANSITION_LINES as readonly Line[]).flatMap((line) =>
  line.kinds.flatMap((kind) =>
    line.from.map((from) => ({ kind, from, event: line.event, to: line.to === 'same' ? from : line.to, ...(line.onlyIf ? { onlyIf: line.onlyIf } : {}) })),
  ),
);

const byKindEvent = new Map<string, Transition[]>();
for (const row of TRANSITIONS) {
  const key = `${row.kind} ${row.event}`;
  if (byKindEvent.get(key)?.some((other) => other.from === row.from)) throw new Error(`two rows for ${key} from ${row.from}`);
  byKindEvent.set(key, [...(byKindEvent.get(key) ?? []), row]);
}

/** The rows of `event` for `kind`, in table order (none: the event does not apply to that kind). */
export const transitionsOf = (kind: DeliveryKindName, event: DeliveryEvent): readonly Transition[] => byKindEvent.get(`${kind} ${event}`) ?? [];

/** What the conditions ask of a row: `claimExpired`, its claim is older than the lease; `ownClaim`, its claim is the writer's. */
export type RowState = { claimExpired?: boolean; ownClaim?: boolean };
const HOLDS: Record<TransitionCondition, keyof RowState> = { 'claim-expired': 'claimExpired', 'own-claim': 'ownClaim' };

/**
 * May `event` move a row of `kind` from status `from`, and to what: the status after (which may be
 * `from` itself), or undefined when the row keeps its status because the event does not apply.
 */
export function transition(kind: DeliveryKindName, event: DeliveryEvent, from: EmailStatus, row: RowState = {}): EmailStatus | undefined {
  const found = transitionsOf(kind, event).find((candidate) => candidate.from === from);
  if (!found || (found.onlyIf !== undefined && !row[HOLDS[found.onlyIf]])) return undefined;
  return found.to;
}

/**
 * The statuses a new row is inserted with: a submission's from its admission
 * (src/api/submissions/admit.ts), a recipient's copy from its recipient's consent (held until it
 * confirms); the other kinds take the column's default.
 */
export const CREATED_AS: Readonly<Record<DeliveryKindName, readonly EmailStatus[]>> = {
  submission: [QUEUED, HELD, 'skipped'],
  'key-email': [QUEUED],
  autoresponse: [QUEUED],
  'recipient-copy': [QUEUED, HELD],
  webhook: [QUEUED],
};
