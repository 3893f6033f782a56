// "Send a test message" on a key's settings page: a message from the owner to the owner, through
// the whole pipeline (the email, the copies to the added recipients, the chat channels and the
// webhooks), marked as a test everywhere ("[Test]" before each email's subject, "Test message" in
// each chat post, `test: true` in each webhook, a badge in the console) and counted nowhere: no
// spam check or teaching, no autoresponse, no storage, no place in the overview's figures or the
// intake's metrics. At most TEST_MESSAGES_PER_HOUR a key, so it cannot be used to send mail at will.
import { EmailCapError, KeyRuleError } from '../../shared/keys/keys.ts';
import { inTransaction } from '../../shared/infra/db/transactions.ts';
import { submissionJob } from '../../shared/deliveries/delivery-jobs.ts';
import { insertTestMessage, lockTestMessages, testMessagesSince } from '../../shared/submissions/submissions.ts';
import type { AppContext, AppDeps } from '../context.ts';
import { enqueueCommitted } from '../submissions/enqueue.ts';
import { newSubmissionId } from '../submissions/submission-id.ts';
import { ownedKey } from './access.ts';

export const TEST_MESSAGES_PER_HOUR = 10;
const HOUR_MS = 3_600_000;

export const TEST_MESSAGE_SUBJECT = 'Test message from your contact form';

/** The test message's id, queued; undefined when the key is not the owner's; a KeyRuleError when it cannot go now. */
export async function sendTestMessage(ctx: AppContext, deps: AppDeps, email: string, keyId: string): Promise<string | undefined> {
  const em = ctx.state.em;
  const key = await ownedKey(em, email, keyId);
  if (!key) return undefined;
  if (key.status !== 'active') throw new KeyRuleError('invalid', 'status', 'A test message needs the key enabled: enable it, then send one.');
  const id = newSubmissionId();
  const now = new Date();
  await inTransaction(em, async (tx) => {
    await lockTestMessages(tx, key.id);
    const recent = await testMessagesSince(tx, key.id, new Date(now.getTime() - HOUR_MS));
    if (recent.count >= TEST_MESSAGES_PER_HOUR) {
      const waitSeconds = Math.max(1, Math.ceil(((recent.oldest ?? now).getTime() + HOUR_MS - now.getTime()) / 1000));
      throw new EmailCapError(
        waitSeconds,
        'test_message',
        `A key sends at most ${TEST_MESSAGES_PER_HOUR} test messages an hour: the next can go in ${Math.ceil(waitSeconds / 60)} minutes.`,
      );
    }
    await insertTestMessage(tx, {
      id,
      keyId: key.id,
      // From the owner to the owner: a reply goes nowhere else.
      email: key.email,
      subject: TEST_MESSAGE_SUBJECT,
      message: `This is a test message, sent from the settings of this key on ${now.toISOString().slice(0, 16).replace('T', ' ')} UTC. It shows how a message of this form reaches you, your added recipients, your chat channels and your webhooks. It is counted in no bound or figure.`,
      customFields: [['name', 'Test sender']],
    });
  });
  await enqueueCommitted(ctx, deps, submissionJob(id, ctx.state.requestId));
  ctx.state.log.info({ keyId: key.id, submissionId: id }, 'owner sent a test message');
  return id;
}
