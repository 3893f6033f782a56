// Webhook endpoints and their deliveries, for the owner console, the admin API, the CLI and the
// workers: up to MAX_WEBHOOKS endpoints per key, each a URL and a signing secret made here and shown
// once (sealed under SECRET, like the keys, so the worker can sign), and the delivery log.
import { randomBytes } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { refuseAtCreation, type AddressPolicy } from './address-guard.ts';
import type { EmailStatus, WebhookEvent } from './db/entities.ts';
import { requeueFailed } from './submissions/data/delivery-status.ts';
import { KeyRuleError } from './keys.ts';
import type { KeyVault } from './secrets.ts';

export const MAX_WEBHOOKS = 3;
const MAX_URL_LENGTH = 2048;

/**
 * An http(s) URL without credentials, whose host is not refused already (an address literal outside
 * `policy`, or localhost). Names are judged at each send (src/shared/address-guard.ts), not here: they
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

export type EndpointRecord = {
  id: string;
  url: string;
  enabled: boolean;
  consecutive_failures: number;
  disabled_at: string | null;
  created_at: string;
};

const ENDPOINT_COLUMNS = `id, url, enabled, consecutive_failures, to_char(disabled_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as disabled_at,
  to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as created_at`;

export async function listEndpoints(em: EntityManager, keyId: string): Promise<EndpointRecord[]> {
  return em.execute<EndpointRecord[]>(`select ${ENDPOINT_COLUMNS} from webhook_endpoints where key_id = ? order by created_at, id`, [keyId]);
}

/** Adds an endpoint to a key; the secret is returned this once. */
export async function createEndpoint(
  em: EntityManager,
  vault: KeyVault,
  keyId: string,
  url: string,
): Promise<{ endpoint: EndpointRecord; secret: string }> {
  const secret = newSecret();
  return em.transactional(async (tx) => {
    // The key's row lock serialises additions, so the limit holds under concurrency.
    await tx.execute('select id from verification_keys where id = ? for update', [keyId]);
    const [count] = await tx.execute<Array<{ n: number }>>('select count(*)::int as n from webhook_endpoints where key_id = ?', [keyId]);
    if ((count?.n ?? 0) >= MAX_WEBHOOKS) throw new KeyRuleError('invalid', 'url', `A key has at most ${MAX_WEBHOOKS} webhooks.`);
    const [endpoint] = await tx.execute<EndpointRecord[]>(
      `insert into webhook_endpoints (id, key_id, url, secret_sealed) values (gen_random_uuid(), ?, ?, ?) returning ${ENDPOINT_COLUMNS}`,
      [keyId, url, vault.encrypt(secret)],
    );
    return { endpoint: endpoint!, secret };
  });
}

/** False when the key has no such endpoint. */
export async function deleteEndpoint(em: EntityManager, keyId: string, endpointId: string): Promise<boolean> {
  const rows = await em.execute('delete from webhook_endpoints where id = ? and key_id = ? returning id', [endpointId, keyId]);
  return rows.length > 0;
}

/** Enabling gives the endpoint a fresh count of failures. False when the key has no such endpoint. */
export async function setEndpointEnabled(em: EntityManager, keyId: string, endpointId: string, enabled: boolean): Promise<boolean> {
  const rows = await em.execute(
    `update webhook_endpoints
        set enabled = ?, consecutive_failures = case when ? then 0 else consecutive_failures end,
            disabled_at = case when ? then null else coalesce(disabled_at, now()) end
      where id = ? and key_id = ? returning id`,
    [enabled, enabled, enabled, endpointId, keyId],
  );
  return rows.length > 0;
}

export type WebhookDeliveryRecord = {
  delivery_id: string;
  endpoint_id: string;
  url: string;
  submission_id: string;
  event: WebhookEvent;
  status: EmailStatus;
  attempts: number;
  last_response_code: number | null;
  last_error: string | null;
  delivered_at: string | null;
  created_at: string;
};

const iso = (column: string) => `to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/**
 * The newest deliveries, newest first: of a key, of one submission of a key (the owner's and the
 * operator's logs), or of one submission whatever its key (the operator's, from the submission).
 */
export async function listWebhookDeliveries(
  em: EntityManager,
  filter: { keyId: string; submissionId?: string; limit: number } | { submissionId: string; limit: number },
): Promise<WebhookDeliveryRecord[]> {
  const conditions: string[] = [];
  const values: string[] = [];
  if ('keyId' in filter) {
    conditions.push('e.key_id = ?');
    values.push(filter.keyId);
  }
  if (filter.submissionId) {
    conditions.push('d.submission_id = ?');
    values.push(filter.submissionId);
  }
  return em.execute<WebhookDeliveryRecord[]>(
    `select d.id as delivery_id, d.endpoint_id, e.url, d.submission_id, d.event, d.email_status as status, d.email_attempts as attempts,
            d.last_response_code, d.last_error, ${iso('d.sent_at')} as delivered_at, ${iso('d.created_at')} as created_at
       from webhook_deliveries d join webhook_endpoints e on e.id = d.endpoint_id
      where ${conditions.join(' and ')}
      order by d.created_at desc, d.id desc limit ${Math.floor(filter.limit)}`,
    values,
  );
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
    await em.execute('update webhook_endpoints set consecutive_failures = 0 where id = ? and consecutive_failures <> 0', [endpointId]);
    return {};
  }
  // now() is the transaction's start: a disabled_at equal to it was set by this very statement.
  const [email] = await em.execute<Array<{ id: string }>>(
    `with counted as (
       update webhook_endpoints e
          set consecutive_failures = e.consecutive_failures + 1,
              enabled = e.enabled and e.consecutive_failures + 1 < ?,
              disabled_at = case when e.enabled and e.consecutive_failures + 1 >= ? then now() else e.disabled_at end
        where e.id = ?
        returning e.key_id, not e.enabled and e.disabled_at = now() as just_disabled
     )
     insert into key_emails (id, kind, email, mailbox, key_id)
     select gen_random_uuid(), 'webhook-disabled', k.email, k.mailbox, k.id
       from counted join verification_keys k on k.id = counted.key_id
      where counted.just_disabled
     returning id`,
    [disableAfter, disableAfter, endpointId],
  );
  return email ? { disabledEmailId: email.id } : {};
}

/** The disabled endpoints of a key, with the last error of each, for the owner's email. */
export async function disabledEndpoints(em: EntityManager, keyId: string): Promise<Array<{ url: string; error: string; failures: number }>> {
  return em.execute(
    `select e.url, e.consecutive_failures as failures,
            coalesce((select d.last_error from webhook_deliveries d where d.endpoint_id = e.id and d.email_status = 'failed'
                       order by d.created_at desc limit 1), 'unknown') as error
       from webhook_endpoints e where e.key_id = ? and not e.enabled order by e.disabled_at desc nulls last`,
    [keyId],
  );
}

/** The id of the (not deleted) key with this value, for the operator's API and CLI; throws not_found. */
export async function keyIdByValue(em: EntityManager, vault: KeyVault, keyValue: string): Promise<string> {
  const [row] = await em.execute<Array<{ id: string }>>(
    `select id from verification_keys where key_hash = ? and status <> 'deleted'`,
    [vault.hash(keyValue)],
  );
  if (!row) throw new KeyRuleError('not_found', 'key', 'Unknown key.');
  return row.id;
}
