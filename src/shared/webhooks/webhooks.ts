// Webhook endpoints and their deliveries, for the owner console, the admin API, the CLI and the
// workers: up to MAX_WEBHOOKS generic endpoints per key, each a URL and a signing secret made here
// and shown once (sealed under SECRET, like the keys, so the worker can sign); up to
// MAX_CHAT_CHANNELS chat channels, each with its credential sealed the same way
// (./chat-channels.ts); and the delivery log.
import { randomBytes } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { refuseAtCreation, type AddressPolicy } from './address-guard.ts';
import { requeueFailed } from '../deliveries/deliveries.ts';
import type { KeyVault } from '../infra/secrets.ts';
import { inTransaction } from '../infra/db/transactions.ts';
import { KeyRuleError, findUndeletedKeyId, lockKeyRow } from '../keys/keys.ts';
import { countEndpoints, countFailure, insertEndpoint, resetFailures, type EndpointRecord } from './data/webhook-endpoints.ts';
import { chatChannelRecord, MAX_CHAT_CHANNELS, type NewChatChannel } from './chat-channels.ts';

export const MAX_WEBHOOKS = 3;
const MAX_URL_LENGTH = 2048;

/**
 * An http(s) URL without credentials, whose host is not refused already (an address literal outside
 * `policy`, or localhost). Names are judged at each send (src/shared/webhooks/address-guard.ts), not here: they
 * resolve anew each time and WEBHOOK_ALLOW may change, so such a refusal shows on the delivery.
 */
export function parseWebhookUrl(input: unknown, policy: AddressPolicy): string {
  const invalid = (why: string) => new KeyRuleError('invalid', 'url', `Not a usable webhook URL: ${why}.`);
  if (typeof input !== 'string' || input.trim() === '') throw invalid('give an http:// or https:// URL');
  if (input.length > MAX_URL_LENGTH) throw invalid(`at most ${MAX_URL_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(input.trim());
  } catch {
    throw invalid('give an http:// or https:// URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw invalid('only http:// and https:// are supported');
  if (url.username || url.password) throw invalid('no user name or password in the URL; check the signature instead');
  const refused = refuseAtCreation(url.hostname, policy);
  // The same words the delivery would record.
  if (refused) throw new KeyRuleError('invalid', 'url', refused.message);
  url.hash = '';
  return url.toString();
}

/** A Standard Webhooks secret: `whsec_` and 24 random bytes in base64. */
const newSecret = () => `whsec_${randomBytes(24).toString('base64')}`;

/** Adds an endpoint to a key; the secret is returned this once. */
export async function createEndpoint(em: EntityManager, vault: KeyVault, keyId: string, url: string): Promise<{ endpoint: EndpointRecord; secret: string }> {
  const secret = newSecret();
  return inTransaction(em, async (tx) => {
    // The key's row lock serialises additions, so the limit holds under concurrency.
    await lockKeyRow(tx, keyId);
    if ((await countEndpoints(tx, keyId, false)) >= MAX_WEBHOOKS) throw new KeyRuleError('invalid', 'url', `A key has at most ${MAX_WEBHOOKS} webhooks.`);
    const endpoint = await insertEndpoint(tx, keyId, { kind: 'webhook', url, secretSealed: vault.encrypt(secret), chatId: null });
    return { endpoint, secret };
  });
}

/**
 * Adds a chat channel to a key, its credential sealed; nothing of the credential is returned but
 * its shortened form. `telegramApi` is TELEGRAM_API_URL, for the shortened request URL shown.
 */
export async function createChatChannel(
  em: EntityManager,
  vault: KeyVault,
  keyId: string,
  channel: NewChatChannel,
  policy: AddressPolicy,
  telegramApi: string,
): Promise<EndpointRecord> {
  const record = chatChannelRecord(channel, policy, telegramApi);
  return inTransaction(em, async (tx) => {
    await lockKeyRow(tx, keyId);
    if ((await countEndpoints(tx, keyId, true)) >= MAX_CHAT_CHANNELS) {
      throw new KeyRuleError('invalid', 'kind', `A key has at most ${MAX_CHAT_CHANNELS} chat channels.`);
    }
    return insertEndpoint(tx, keyId, { kind: record.kind, url: record.shown, secretSealed: vault.encrypt(record.credential), chatId: record.chatId });
  });
}

/**
 * Puts a failed delivery of the key back to `queued` (the reconciler finds it should the enqueue
 * be lost). False when the key has no such failed delivery.
 */
export async function markWebhookForResend(em: EntityManager, keyId: string, deliveryId: string): Promise<boolean> {
  return requeueFailed(em, 'webhook', deliveryId, keyId);
}

/**
 * Counts a delivery's end against its endpoint: a delivery resets the count, a failure adds one and
 * disables the endpoint at `disableAfter`. The transition itself (once) adds the owner's
 * `webhook-disabled` email, in the same statement; its id is returned for the enqueue.
 */
export async function recordEndpointOutcome(
  em: EntityManager,
  endpointId: string,
  delivered: boolean,
  disableAfter: number,
): Promise<{ disabledEmailId?: string }> {
  if (delivered) {
    await resetFailures(em, endpointId);
    return {};
  }
  const disabledEmailId = await countFailure(em, endpointId, disableAfter);
  return disabledEmailId ? { disabledEmailId } : {};
}

/** The id of the (not deleted) key with this value, for the operator's API and CLI; throws not_found. */
export async function keyIdByValue(em: EntityManager, vault: KeyVault, keyValue: string): Promise<string> {
  const id = await findUndeletedKeyId(em, vault.hash(keyValue));
  if (id === undefined) throw new KeyRuleError('not_found', 'key', 'Unknown key.');
  return id;
}

// What the API, the workers, the CLI and the other features call of this feature's data modules
// (they import no data module of another feature: test/unit/module-boundaries.test.ts).
export {
  addBouncedEvents,
  findDeliveryToSend,
  findUnwrittenCreatedEvents,
  listWebhookDeliveries,
  type UnwrittenCreatedEvents,
  writeCreatedEvent,
} from './data/webhook-deliveries.ts';
export { deleteEndpoint, disabledEndpoints, type EndpointRecord, findEndpointToPost, listEndpoints, setEndpointEnabled } from './data/webhook-endpoints.ts';
