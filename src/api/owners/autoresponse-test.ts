// "Send me this autoresponse" on a key's settings page: the key's autoresponse, as saved, as a visitor
// would receive it, to the owner's own address, "[Test] " before its subject. A key email of its own
// kind, delivered like the others (a row, a job, retries): not an autoresponse, so it takes nothing
// from the autoresponse bounds of the key, the owner or any visitor, and no autoresponse figure or
// metric counts it; nor from the hourly allowance of key emails. At most AUTORESPONSE_TESTS_PER_HOUR
// a key, so it cannot be used to send mail at will.
import { inTransaction } from '../../shared/infra/db/transactions.ts';
import { autoresponseTestsLastHour, EmailCapError, insertAutoresponseTestEmail, KeyRuleError } from '../../shared/keys/keys.ts';
import { keyEmailJob } from '../../shared/deliveries/delivery-jobs.ts';
import type { AppDeps, RouteContext } from '../context.ts';
import { enqueueCommitted } from '../submissions/enqueue.ts';
import { ownedKey } from './access.ts';

export const AUTORESPONSE_TESTS_PER_HOUR = 5;

/** Whether the test was queued (false: the key is not the owner's); a KeyRuleError when it cannot go now. */
export async function sendAutoresponseTest(ctx: RouteContext, deps: AppDeps, email: string, keyId: string): Promise<boolean> {
  const key = await ownedKey(ctx.state.em, email, keyId);
  if (!key) return false;
  if (!key.autoresponseSubject || !key.autoresponseText) {
    throw new KeyRuleError('invalid', 'autoresponse_test', 'Save a subject and a text for the autoresponse first: the test sends it as saved.');
  }
  const id = await inTransaction(ctx.state.em, async (tx) => {
    const recent = await autoresponseTestsLastHour(tx, key.id);
    if (recent.sent >= AUTORESPONSE_TESTS_PER_HOUR) {
      const waitSeconds = Math.max(1, recent.retryAfter ?? 3600);
      throw new EmailCapError(
        waitSeconds,
        'autoresponse_test',
        `A key sends at most ${AUTORESPONSE_TESTS_PER_HOUR} autoresponse tests an hour: the next can go in ${Math.ceil(waitSeconds / 60)} minutes.`,
      );
    }
    return insertAutoresponseTestEmail(tx, key);
  });
  await enqueueCommitted(ctx, deps, keyEmailJob(id, ctx.state.requestId));
  ctx.state.log.info({ keyId: key.id, keyEmailId: id }, 'owner sent an autoresponse test');
  return true;
}
