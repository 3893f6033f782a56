// A new submission's id: a UUID v7, time-ordered, so that new rows land at the right edge of the
// primary-key index instead of on a random page of it, which keeps inserts cheap as the table grows
// (npm run bench, 6). Its random bits come from a pool filled for 256 ids at once: left to itself,
// uuid asks WebCrypto for 16 bytes per id, a call that cost the API more than any function of its own
// (docs/benchmarks.md#the-whole-pipeline).
import { randomFillSync } from 'node:crypto';
import { v7 } from 'uuid';

const IDS_PER_FILL = 256;
const pool = new Uint8Array(16 * IDS_PER_FILL);
let used = IDS_PER_FILL;

export function newSubmissionId(): string {
  if (used === IDS_PER_FILL) {
    randomFillSync(pool);
    used = 0;
  }
  const random = pool.subarray(used * 16, (used + 1) * 16);
  used += 1;
  // Within one millisecond, ids differ in their random bits: RFC 9562 orders them by time only.
  return v7({ random });
}
