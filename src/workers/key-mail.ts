// The key-email job: a new key to its owner, or every active key of an address.
import type { Job } from 'bullmq';
import { KeyEmailSchema, VerificationKeySchema, type VerificationKey } from '../shared/db/entities.ts';
import type { KeyVault } from '../shared/secrets.ts';
import type { DeliveryJobs } from '../shared/queue.ts';
import { renderAllKeysEmail, renderNewKeyEmail, type KeyForEmail } from './render-keys.ts';
import { messageIdFor, sendTracked, type SendContext, type SendOutcome } from './send.ts';

export async function deliverKeyEmail(
  context: SendContext & { mailFrom: string; publicUrl: string; vault: KeyVault },
  job: Job<DeliveryJobs['key-email']>,
): Promise<SendOutcome> {
  const { keyEmailId } = job.data;
  return sendTracked(context, 'key_emails', keyEmailId, job, async () => {
    const { em } = context;
    const keyEmail = await em.findOneOrFail(KeyEmailSchema, keyEmailId, { populate: ['key'] });
    const opened = (key: VerificationKey): KeyForEmail => ({ ...key, value: context.vault.decrypt(key.keyEncrypted) });
    const email =
      keyEmail.kind === 'new-key' && keyEmail.key
        ? renderNewKeyEmail(opened(keyEmail.key), context.publicUrl)
        : renderAllKeysEmail(
            keyEmail.email,
            (await em.find(VerificationKeySchema, { email: keyEmail.email, status: 'active' }, { orderBy: { createdAt: 'asc' } })).map(opened),
            context.publicUrl,
          );
    return {
      message: {
        from: context.mailFrom,
        to: keyEmail.email,
        subject: email.subject,
        text: email.text,
        html: email.html,
        messageId: messageIdFor('key-email', keyEmailId, context.mailFrom),
      },
    };
  });
}
