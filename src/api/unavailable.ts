// Whether an error means that a service the API depends on, PostgreSQL above all, cannot be reached
// for now (stopped, restarting, recovering, connections cut), as opposed to a bad statement or a bug.
// The API answers the first with a 503 and Retry-After: the same request succeeds once it is back.

import { configuredTimeouts, type DatabasePooler } from '../shared/infra/db/pg-pool.ts';
import type { PgPoolOptions } from '../shared/infra/db/orm.ts';

/**
 * How long a request waits for PostgreSQL: 5 s for a connection (opened, or freed by another
 * request), 5 s for each statement's answer (with the default PG_STATEMENT_TIMEOUT_MS). Past that it
 * is answered 503 with Retry-After, as when PostgreSQL is down: behind a partition a connection
 * hangs instead of failing, and TCP alone would hold the request for minutes.
 */
export const API_PG_WAITS = { connectMs: 5_000, queryMs: 5_000 } as const;

/** What the API gives up on a statement after, beyond PostgreSQL's own bound: the cancel's round trip. */
const ANSWER_MARGIN_MS = 1_000;

/**
 * The API's waits with PostgreSQL's own bound below them: the server cancels a statement at
 * PG_STATEMENT_TIMEOUT_MS, before the API stops waiting for it, so no statement of a request that
 * was answered goes on running.
 */
export function apiPgWaits(config: {
  PG_STATEMENT_TIMEOUT_MS: number;
  PG_IDLE_IN_TRANSACTION_TIMEOUT_MS: number;
  DATABASE_POOLER: DatabasePooler;
}): PgPoolOptions {
  return {
    connectMs: API_PG_WAITS.connectMs,
    queryMs: config.PG_STATEMENT_TIMEOUT_MS + ANSWER_MARGIN_MS,
    timeouts: configuredTimeouts(config, 'request'),
    pooler: config.DATABASE_POOLER,
  };
}

/** Socket errors of a server that is down or unreachable. */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);
/**
 * SQLSTATE 57P01-57P03: shutting down, crashed, not accepting connections yet (starting, recovering).
 * 57014: a statement cancelled at statement_timeout, PostgreSQL too busy to answer in time.
 */
const SHUTDOWN_STATES = new Set(['57P01', '57P02', '57P03', '57014']);
/** SQLSTATE class 08: connection exceptions. */
const CONNECTION_EXCEPTION = /^08[0-9A-Z]{3}$/;
/** node-postgres's own words when a connection ends, broke earlier, cannot be made in time, or its answer does not come in time. */
const CONNECTION_LOST = /^Connection terminated|^Client has encountered a connection error|timeout exceeded when trying to connect|^Query read timeout/;

export function isServiceUnavailable(error: unknown): boolean {
  let current: unknown = error;
  // MikroORM's DriverException wraps the pg error; look a few causes deep, no further.
  for (let depth = 0; depth < 4 && current instanceof Error; depth++, current = current.cause) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && (NETWORK_CODES.has(code) || SHUTDOWN_STATES.has(code) || CONNECTION_EXCEPTION.test(code))) return true;
    if (CONNECTION_LOST.test(current.message)) return true;
  }
  return false;
}
