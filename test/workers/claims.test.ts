// The claims of submissions that a worker's concurrent jobs share (src/workers/delivery/submission-claims.ts,
// claimSubmissions in src/shared/deliveries/data/claims.ts): each job gets its own row, only if its own
// compare-and-set succeeded, and a row named twice is claimed once.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimSubmissions } from '../../src/shared/deliveries/deliveries.ts';
import { NOW, updateSubmission } from '../support/factories.ts';
import { startHarness, type Harness } from '../support/harness.ts';
import { submitJson } from '../support/client.ts';
import { OWNER_MIN_LEARNS } from '../../src/shared/spam/spam-filter.ts';

const LEASE_MS = 60_000;
let h: Harness;
let pool: pg.Pool;
let key: { key: string; email: string };
beforeAll(async () => {
  // No worker: the rows stay `queued` until this test claims them.
  h = await startHarness({ worker: false });
  pool = new pg.Pool({ connectionString: h.config.DATABASE_URL, max: 1 });
  key = await h.createKey({ email: 'claims-owner@example.test' });
});
afterAll(async () => {
  await pool?.end();
  await h?.stop();
});

const submit = async (message: string): Promise<string> =>
  (await submitJson(h, { access_key: key.key, email: 'visitor@example.org', message })).json.submission_id as string;

describe('claims shared by concurrent jobs', () => {
  it('gives each id its own row, once, and nothing for a row already claimed or sent', async () => {
    const [a, b, sending, sent] = [await submit('a'), await submit('b'), await submit('c'), await submit('d')];
    await updateSubmission(h, sending, { status: 'sending', claimedAt: NOW });
    await updateSubmission(h, sent, { status: 'sent', sentAt: NOW });

    const claims = await claimSubmissions(pool, [b, a, sending, a.toUpperCase(), sent, a], LEASE_MS, OWNER_MIN_LEARNS);

    expect(claims.map((claim) => claim && { id: claim.submission.id, message: claim.submission.message, attempt: claim.attempt })).toEqual([
      { id: b, message: 'b', attempt: 1 },
      { id: a, message: 'a', attempt: 1 },
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
    expect(claims[0]!.submission.keyEmail).toBe(key.email);
    const rows = await h.sql<{ id: string; email_status: string; email_attempts: number }>(
      'select id, email_status, email_attempts from submissions where id = any($1) order by message',
      [[a, b, sending, sent]],
    );
    expect(rows.map((row) => [row.email_status, row.email_attempts])).toEqual([
      ['sending', 1],
      ['sending', 1],
      ['sending', 0],
      ['sent', 0],
    ]);
    // Claimed once: a second claim of the same rows, within the lease, gets nothing.
    expect(await claimSubmissions(pool, [a, b], LEASE_MS, OWNER_MIN_LEARNS)).toEqual([undefined, undefined]);
  });
});
