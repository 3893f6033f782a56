// The webhook_endpoints table: a key's endpoints (kind, URL, sealed signing secret or chat credential,
// enabled, failures in a row).
import type { EntityManager } from '@mikro-orm/postgresql';
import type { EndpointKind } from '../endpoint-kinds.ts';

export type EndpointRecord = {
  id: string;
  kind: EndpointKind;
  /** A generic webhook's URL; a chat channel's request URL shortened (its credential left out). */
  url: string;
  /** A Telegram channel's chat, else null. */
  chat_id: string | null;
  enabled: boolean;
  consecutive_failures: number;
  disabled_at: string | null;
  created_at: string;
};

const ENDPOINT_COLUMNS = `id, kind, url, chat_id, enabled, consecutive_failures, to_char(disabled_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as disabled_at,
  to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as created_at`;

export async function listEndpoints(em: EntityManager, keyId: string): Promise<EndpointRecord[]> {
  return em.execute<EndpointRecord[]>(`select ${ENDPOINT_COLUMNS} from webhook_endpoints where key_id = ? order by created_at, id`, [keyId]);
}

/** The key's generic webhooks (`chat` false) or its chat channels (`chat` true). */
export async function countEndpoints(tx: EntityManager, keyId: string, chat: boolean): Promise<number> {
  const [count] = await tx.execute<Array<{ n: number }>>(`select count(*)::int as n from webhook_endpoints where key_id = ? and (kind <> 'webhook') = ?`, [
    keyId,
    chat,
  ]);
  return count?.n ?? 0;
}

/** Adds an endpoint with its secret (or chat credential) sealed. */
export async function insertEndpoint(
  tx: EntityManager,
  keyId: string,
  endpoint: { kind: EndpointKind; url: string; secretSealed: string; chatId: string | null },
): Promise<EndpointRecord> {
  const [inserted] = await tx.execute<EndpointRecord[]>(
    `insert into webhook_endpoints (id, key_id, kind, url, secret_sealed, chat_id) values (gen_random_uuid(), ?, ?, ?, ?, ?) returning ${ENDPOINT_COLUMNS}`,
    [keyId, endpoint.kind, endpoint.url, endpoint.secretSealed, endpoint.chatId],
  );
  return inserted!;
}

/** One endpoint of the key with what a post to it needs (its sealed secret or credential); undefined when the key has no such endpoint. */
export async function findEndpointToPost(
  em: EntityManager,
  keyId: string,
  endpointId: string,
): Promise<{ id: string; kind: EndpointKind; url: string; chat_id: string | null; secret_sealed: string } | undefined> {
  const [row] = await em.execute<Array<{ id: string; kind: EndpointKind; url: string; chat_id: string | null; secret_sealed: string }>>(
    'select id, kind, url, chat_id, secret_sealed from webhook_endpoints where id = ? and key_id = ?',
    [endpointId, keyId],
  );
  return row;
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

/** A delivery went through: the endpoint's failures in a row start again from none. */
export async function resetFailures(em: EntityManager, endpointId: string): Promise<void> {
  await em.execute('update webhook_endpoints set consecutive_failures = 0 where id = ? and consecutive_failures <> 0', [endpointId]);
}

/**
 * One more failure in a row for the endpoint, which is disabled at `disableAfter`. The transition
 * itself (once) adds the owner's `webhook-disabled` email, in the same statement: its id, else undefined.
 */
export async function countFailure(em: EntityManager, endpointId: string, disableAfter: number): Promise<string | undefined> {
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
  return email?.id;
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
