// The key-email job: a new key to its owner, every active key of an address, or the one
// "confirm to receive more" email, or an owner console sign-in link, or a webhook switched off, or
// the request to an address added to a key to confirm it wants copies, or the key's autoresponse
// sent to its owner as a test. Key emails to an unconfirmed mailbox carry the confirm link.
import type { Job } from 'bullmq';
import type { EntityManager } from '@mikro-orm/postgresql';
import { type ConsentSigner } from '../../shared/keys/consent.ts';
import { isConfirmed, findKeyEmailWithKey, findActiveKeysOfAddress } from '../../shared/keys/keys.ts';
import type { KeyEmail, VerificationKey } from '../../shared/keys/entities.ts';
import type { KeyVault } from '../../shared/infra/secrets.ts';
import type { DeliveryJobs } from '../../shared/deliveries/delivery-jobs.ts';
import { signInLink, SIGN_IN_LINK_TTL_MINUTES } from '../../shared/owners/owners.ts';
import { disabledEndpoints } from '../../shared/webhooks/webhooks.ts';
import {
  renderAllKeysEmail,
  renderConfirmEmail,
  renderNewKeyEmail,
  renderRecipientConfirmEmail,
  renderSignInEmail,
  renderWebhookDisabledEmail,
  type KeyForEmail,
} from './render-key-emails.ts';
import type { RenderedEmail } from './email-templates.ts';
import { hasComplained } from '../../shared/deliveries/deliveries.ts';
import { complaintStops } from '../../shared/bounces/suppression.ts';
import { messageIdFor } from '../../shared/deliveries/delivery-kinds.ts';
import { claimOnly, sendTracked, suppressedByComplaint, SuppressedError, type SendContext, type SendOutcome } from './send.ts';
import { findRecipientOfKey } from '../../shared/recipients/recipients.ts';
import { AUTORESPONSE_TEST_HEADERS, renderAutoresponseTest } from './autoresponse-test-email.ts';

/** What the key emails need of the configuration. */
export type KeyMailSettings = { mailFrom: string; publicUrl: string; unconfirmedPerHour: number };

type KeyMailContext = SendContext & KeyMailSettings & { vault: KeyVault; consent: ConsentSigner };

export async function deliverKeyEmail(context: KeyMailContext, job: Job<DeliveryJobs['key-email']>): Promise<SendOutcome> {
  const { keyEmailId } = job.data;
  return sendTracked(context, 'key-email', keyEmailId, job, claimOnly(context, 'key-email', keyEmailId), async () => {
    const { em } = context;
    const keyEmail = await findKeyEmailWithKey(em, keyEmailId);
    if (complaintStops(keyEmail.kind) && (await hasComplained(em, keyEmail.mailbox))) {
      throw suppressedByComplaint();
    }
    const email = await renderKeyEmail(em, context, keyEmail);
    return {
      message: {
        from: context.mailFrom,
        to: keyEmail.email,
        subject: email.subject,
        text: email.text,
        html: email.html,
        messageId: messageIdFor('key-email', keyEmailId, context.mailFrom),
        ...(keyEmail.kind === 'autoresponse-test' ? { replyTo: keyEmail.email, headers: AUTORESPONSE_TEST_HEADERS } : {}),
      },
    };
  });
}

async function renderKeyEmail(em: EntityManager, context: KeyMailContext, keyEmail: KeyEmail): Promise<RenderedEmail> {
  if (keyEmail.kind === 'sign-in') {
    const signIn = await signInLink(em, context.vault, context.publicUrl, keyEmail.id);
    // A link used or expired before it could be sent is worth nothing: the owner asks again.
    if (!signIn) throw new Error('the sign-in link expired before it could be sent');
    return renderSignInEmail(keyEmail.email, signIn, SIGN_IN_LINK_TTL_MINUTES);
  }
  if (keyEmail.kind === 'recipient-confirm' && keyEmail.key) {
    const recipient = await findRecipientOfKey(em, keyEmail.key.id, keyEmail.mailbox);
    // Removed (by the owner, or by the address through an earlier request) before this one could go.
    if (!recipient) throw new SuppressedError('not attempted: the address was removed from the key before its request to confirm went');
    return renderRecipientConfirmEmail(keyEmail.email, keyEmail.key.email, context.consent.recipientLink(context.publicUrl, recipient.id));
  }
  if (keyEmail.kind === 'autoresponse-test' && keyEmail.key) return renderAutoresponseTest(keyEmail.key, keyEmail.createdAt);
  if (keyEmail.kind === 'webhook-disabled' && keyEmail.key) {
    const endpoints = await disabledEndpoints(em, keyEmail.key.id);
    return renderWebhookDisabledEmail(endpoints, Math.max(1, ...endpoints.map((endpoint) => endpoint.failures)), `${context.publicUrl}/owner`);
  }
  const link = context.consent.link(context.publicUrl, keyEmail.email);
  if (keyEmail.kind === 'confirm') return renderConfirmEmail(keyEmail.email, link, context.unconfirmedPerHour);
  const confirmLink = (await isConfirmed(em, keyEmail.mailbox)) ? undefined : link;
  const opened = (key: VerificationKey): KeyForEmail => ({ ...key, value: context.vault.decrypt(key.keyEncrypted) });
  if (keyEmail.kind === 'new-key' && keyEmail.key) return renderNewKeyEmail(opened(keyEmail.key), context.publicUrl, confirmLink);
  const keys = await findActiveKeysOfAddress(em, keyEmail.email);
  return renderAllKeysEmail(keyEmail.email, keys.map(opened), context.publicUrl, confirmLink);
}
