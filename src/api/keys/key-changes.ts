// Every change a request makes to what a cached key carries (the key's settings, its webhook
// endpoints, its mailbox's consent) goes through here, so this process forgets its cached keys
// (src/api/submissions/key-cache.ts) before it answers: its next submission sees the change at
// once. Other processes hear of it from PostgreSQL's notification.
// test/unit/api/key-changes.test.ts keeps the routes from calling those changes any other way.
import type { EntityManager } from '@mikro-orm/postgresql';
import { inTransaction } from '../../shared/infra/db/transactions.ts';
import { confirmMailbox } from '../../shared/keys/consent.ts';
import type { VerificationKey } from '../../shared/keys/entities.ts';
import { KeyRuleError } from '../../shared/keys/keys.ts';
import { updateKeySettings, type KeySettingsChanges } from '../../shared/autoresponses/autoresponse-settings.ts';
import { spamRefusal } from '../../shared/autoresponses/text-check.ts';
import { setRecipients, type RecipientsEdit } from '../../shared/recipients/recipients.ts';
import { keyEmailJob } from '../../shared/deliveries/delivery-jobs.ts';
import type { AddressPolicy } from '../../shared/webhooks/address-guard.ts';
import type { NewChatChannel } from '../../shared/webhooks/chat-channels.ts';
import { createChatChannel, createEndpoint } from '../../shared/webhooks/webhooks.ts';
import { deleteEndpoint, setEndpointEnabled } from '../../shared/webhooks/webhooks.ts';
import type { AppContext, AppDeps } from '../context.ts';
import { enqueueCommitted } from '../submissions/enqueue.ts';

type Deps = Pick<AppDeps, 'keys' | 'vault'>;
type ChatDeps = Deps & { config: Pick<AppDeps['config'], 'TELEGRAM_API_URL'> };

/** Runs one change, then forgets the cached keys. */
async function forgetting<T>(deps: Deps, change: Promise<T>): Promise<T> {
  const result = await change;
  deps.keys.forgetAll();
  return result;
}

/**
 * Changes a key's settings and, when `recipients` is given, makes its added recipients that list
 * (src/shared/recipients): in one transaction, so that a refusal of either changes neither. The
 * requests to confirm the addresses it adds are enqueued once it is committed. Added recipients
 * are not part of a cached key (they get copies made by the workers), but its settings are.
 */
export async function changeKey(
  ctx: AppContext,
  deps: Deps & Pick<AppDeps, 'config' | 'queue' | 'webhookQueue' | 'redis' | 'spamFilter' | 'erasedForm'>,
  keyHash: string,
  changes: KeySettingsChanges,
  recipients?: RecipientsEdit,
): Promise<VerificationKey> {
  const { key, confirmEmailIds } = await forgetting(
    deps,
    inTransaction(ctx.state.em, async (tx) => {
      const changed = await updateKeySettings(tx, keyHash, changes);
      if (changes.autoresponse?.subject !== undefined || changes.autoresponse?.text !== undefined) await checkAutoresponseAsMail(deps, changed);
      if (recipients === undefined) return { key: changed, confirmEmailIds: [] };
      const change = await setRecipients(tx, changed, recipients, { emailsPerHour: deps.config.KEY_EMAILS_PER_HOUR, erasedForm: deps.erasedForm });
      return { key: changed, confirmEmailIds: change.confirmEmailIds };
    }),
  );
  for (const id of confirmEmailIds) await enqueueCommitted(ctx, deps, keyEmailJob(id, ctx.state.requestId));
  return key;
}

/**
 * The owner's new autoresponse words, read by the spam filter before they are saved (the refusal
 * rolls the change back). A filter that does not answer costs nothing here: each autoresponse is
 * checked again before it is sent.
 */
async function checkAutoresponseAsMail(deps: Pick<AppDeps, 'config' | 'spamFilter'>, key: VerificationKey): Promise<void> {
  if (!deps.spamFilter || !key.autoresponseSubject || !key.autoresponseText) return;
  const text = { subject: key.autoresponseSubject, text: key.autoresponseText, ownerEmail: key.email, ownerMailbox: key.mailbox };
  const settings = { mailFrom: deps.config.MAIL_FROM, threshold: deps.config.SPAM_SCORE_NORMAL, timeoutMs: deps.config.SPAM_CHECK_TIMEOUT_MS };
  const refused = await spamRefusal(deps.spamFilter, text, settings).catch(() => undefined);
  if (refused) throw new KeyRuleError('invalid', refused.field, refused.message);
}

export const addWebhook = (deps: Deps, em: EntityManager, keyId: string, url: string) => forgetting(deps, createEndpoint(em, deps.vault, keyId, url));

export const addChatChannel = (deps: ChatDeps, em: EntityManager, keyId: string, channel: NewChatChannel, policy: AddressPolicy) =>
  forgetting(deps, createChatChannel(em, deps.vault, keyId, channel, policy, deps.config.TELEGRAM_API_URL));

export const enableWebhook = (deps: Deps, em: EntityManager, keyId: string, endpointId: string, enabled: boolean) =>
  forgetting(deps, setEndpointEnabled(em, keyId, endpointId, enabled));

export const deleteWebhook = (deps: Deps, em: EntityManager, keyId: string, endpointId: string) => forgetting(deps, deleteEndpoint(em, keyId, endpointId));

/** The mailbox wants this service's mail: confirmed, and its held submissions released (their ids). */
export const confirmMailboxOf = (deps: Deps, em: EntityManager, mailbox: string) => forgetting(deps, confirmMailbox(em, mailbox));
