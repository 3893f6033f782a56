// The pieces every status statement of the delivery kinds is built from (./claims.ts,
// ./outcomes.ts, ./releases.ts): each statement's status guard and the status it writes come from
// the table of ../delivery-transitions.ts, so the table and the SQL cannot disagree; their other
// columns are each statement's own. Tables come from the kind's descriptor (constants, never input).
import type pg from 'pg';
import { deliveryKinds, type DeliveryKindName } from '../delivery-kinds.ts';
import { EMAIL_STATUSES, type EmailStatus } from '../delivery-columns.ts';
import { sqlList } from '../delivery-statuses.ts';
import { transitionsOf, type DeliveryEvent, type TransitionCondition } from '../delivery-transitions.ts';

export const tableOf = (kind: DeliveryKindName) => deliveryKinds[kind].table;

/**
 * The SQL pieces built from the table, each built once: the statements that use them run for every
 * email, and the table does not change while the process runs.
 */
const built = new Map<string, string | undefined>();
function once(id: string, build: () => string): string;
function once(id: string, build: () => string | undefined): string | undefined;
function once(id: string, build: () => string | undefined): string | undefined {
  if (!built.has(id)) built.set(id, build());
  return built.get(id);
}

const inList = (statuses: readonly EmailStatus[]) => (statuses.length === 1 ? `= '${statuses[0]}'` : `in (${sqlList(statuses)})`);

function rowsOf(kind: DeliveryKindName, event: DeliveryEvent) {
  const rows = transitionsOf(kind, event);
  if (rows.length === 0) throw new Error(`${event} does not apply to a ${kind} row`);
  return rows;
}

/**
 * The statement's own SQL for the table's conditions on a row: `claimExpired`, its test that the
 * claim is past its lease; `ownClaim`, its test that the claim is still the writer's.
 */
type ConditionSql = { claimExpired?: string; ownClaim?: string };
const SQL_OF: Record<TransitionCondition, keyof ConditionSql> = { 'claim-expired': 'claimExpired', 'own-claim': 'ownClaim' };
type GuardOptions = { column?: string } & ConditionSql;

/**
 * The statuses `event` moves a row of `kind` from, with the table's conditions, as a condition on
 * `column`: undefined when it moves it from any status unconditionally (the statement is not guarded).
 */
function statusGuard(kind: DeliveryKindName, event: DeliveryEvent, options: GuardOptions = {}): string | undefined {
  return once(`guard|${kind}|${event}|${options.column ?? ''}|${options.claimExpired ?? ''}|${options.ownClaim ?? ''}`, () =>
    buildStatusGuard(kind, event, options),
  );
}

function buildStatusGuard(kind: DeliveryKindName, event: DeliveryEvent, options: GuardOptions): string | undefined {
  const column = options.column ?? 'email_status';
  const rows = rowsOf(kind, event);
  /** `statuses` as a condition on the column, undefined for all of them; the shorter list: `not in` the few statuses an event that takes nearly any row refuses. */
  const among = (statuses: readonly EmailStatus[]) => {
    const refused = EMAIL_STATUSES.filter((status) => !statuses.includes(status));
    if (refused.length === 0) return undefined;
    return refused.length < statuses.length ? `${column} not in (${sqlList(refused)})` : `${column} ${inList(statuses)}`;
  };
  const parts: string[] = [];
  const plain = rows.filter((row) => row.onlyIf === undefined).map((row) => row.from);
  if (plain.length > 0) {
    const condition = among(plain);
    // Every status, unconditionally: nothing to guard.
    if (condition === undefined) return undefined;
    parts.push(condition);
  }
  for (const onlyIf of new Set(rows.flatMap((row) => (row.onlyIf === undefined ? [] : [row.onlyIf])))) {
    const sql = options[SQL_OF[onlyIf]];
    if (sql === undefined) throw new Error(`${event} of a ${kind} row needs the statement's test of ${onlyIf}`);
    const statuses = among(rows.filter((row) => row.onlyIf === onlyIf).map((row) => row.from));
    parts.push(statuses === undefined ? sql : `(${statuses} and ${sql})`);
  }
  return parts.length === 1 ? parts[0] : `(${parts.join('\n             or ')})`;
}

/** The guard as a condition that is always there: `true` for an event that applies to any status. */
export const statusCondition = (kind: DeliveryKindName, event: DeliveryEvent, options: { column?: string } = {}) => statusGuard(kind, event, options) ?? 'true';

/** The guard as more of a where clause: ` and <guard>`, or nothing. */
export const andStatus = (kind: DeliveryKindName, event: DeliveryEvent, options: GuardOptions = {}) => {
  const guard = statusGuard(kind, event, options);
  return guard === undefined ? '' : ` and ${guard}`;
};

/**
 * The status `event` writes on a row of `kind`: the table's `to`, or, when that depends on the
 * status before (read from `column`), a case naming the statuses of each but the commonest.
 */
export function statusAfter(kind: DeliveryKindName, event: DeliveryEvent, column = 'email_status'): string {
  return once(`after|${kind}|${event}|${column}`, () => buildStatusAfter(kind, event, column));
}

function buildStatusAfter(kind: DeliveryKindName, event: DeliveryEvent, column: string): string {
  const rows = rowsOf(kind, event);
  const targets = [...new Set(rows.map((row) => row.to))];
  const fromsOf = (to: EmailStatus) => rows.filter((row) => row.to === to).map((row) => row.from);
  if (targets.length === 1) return `'${targets[0]}'`;
  const [otherwise, ...named] = targets.sort((a, b) => fromsOf(b).length - fromsOf(a).length);
  return `case ${named.map((to) => `when ${column} ${inList(fromsOf(to))} then '${to}'`).join(' ')} else '${otherwise}' end`;
}

/**
 * A claim, as its worker names it when it records the outcome: the claimed_at the claim wrote, to
 * the microsecond, as ISO 8601 text (a JS Date keeps only milliseconds). Each claim of a row writes
 * a later one: a claim is taken only from a row unclaimed or claimed longer ago than the lease.
 */
export type ClaimToken = string;
export const claimTokenOf = (column: string) => `to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

/** The test of `own-claim` (../delivery-transitions.ts) in a statement with `?` placeholders: its parameter is the writer's ClaimToken. */
export const OWN_CLAIM = { ownClaim: 'claimed_at = ?::timestamptz' };

/** What runs a parameterised statement: a pg pool or client. */
export type Queryable = Pick<pg.Pool, 'query'>;
