// The webhook_deliveries table: one row per event and endpoint, with the delivery columns. The
// statements that change a delivery's status are in ../../submissions/data/delivery-rows.ts.
import type { EntityManager } from '@mikro-orm/postgresql';
import type pg from 'pg';
import { WebhookDeliverySchema, type WebhookEvent } from '../entities.ts';
import type { EmailStatus } from '../../deliveries/delivery-columns.ts';
import type { EndpointKind } from '../endpoint-kinds.ts';

export type WebhookDeliveryRecord = {
  delivery_id: string;
  endpoint_id: string;
  kind: EndpointKind;
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
    `select d.id as delivery_id, d.endpoint_id, e.kind, e.url, d.submission_id, d.event, d.email_status as status, d.email_attempts as attempts,
            d.last_response_code, d.last_error, ${iso('d.sent_at')} as delivered_at, ${iso('d.created_at')} as created_at
       from webhook_deliveries d join webhook_endpoints e on e.id = d.endpoint_id
      where ${conditions.join(' and ')}
      order by d.created_at desc, d.id desc limit ${Math.floor(filter.limit)}`,
    values,
  );
}

/**
 * Writes the `submission.created` delivery of a webhook job whose row the API left to the workers
 * (its submission was queued for email: the email worker's claim writes it too, whichever comes
 * first). Nothing when it is there already, or when the endpoint is disabled or gone, or the
 * submission is gone.
 */
export async function writeCreatedEvent(em: EntityManager, deliveryId: string, submissionId: string, endpointId: string): Promise<void> {
  await em.execute(
    `insert into webhook_deliveries (id, endpoint_id, submission_id)
     select ?, e.id, s.id from webhook_endpoints e join submissions s on s.key_id = e.key_id
      where e.id = ? and s.id = ? and e.enabled
     on conflict (id) do nothing`,
    [deliveryId, endpointId, submissionId],
  );
}

/** A submission whose `submission.created` deliveries are not all written: the endpoints still without one. */
export type UnwrittenCreatedEvents = { id: string; created_at: string; endpoint_ids: string[] };

/**
 * One page, in (created_at, id) order after `after`, of the submissions still `queued` for their
 * email, older than `staleAfterMs`, that lack the `submission.created` delivery of an enabled
 * endpoint their key had when they came: the rows their webhook jobs (or their emails' claims)
 * would write. Those of a queued submission are written by the workers; when the API could not
 * queue their jobs, the reconciler finds them here (src/workers/housekeeping/unwritten-webhooks.ts)
 * rather than waiting for the email's claim, which waits for the SMTP relay. The same rule as the
 * claim's (../../deliveries/data/claims.ts), so either writes the same rows.
 */
export async function findUnwrittenCreatedEvents(
  em: EntityManager,
  staleAfterMs: number,
  limit: number,
  after?: { id: string; created_at: string },
): Promise<UnwrittenCreatedEvents[]> {
  // The queued submissions first, through the index of the open ones: the rows the reconciler reads
  // for their emails anyway. Materialized, so that the planner cannot start from an endpoint and
  // walk its key's whole history instead.
  return em.execute<UnwrittenCreatedEvents[]>(
    `with queued as materialized (
       select s.id, s.key_id, s.created_at from submissions s
        where s.email_status = 'queued' and not s.settled and s.created_at < now() - make_interval(secs => ?)
          ${after ? 'and (s.created_at, s.id) > (cast(? as timestamptz), cast(? as uuid))' : ''})
     select q.id, q.created_at::text as created_at, array_agg(e.id::text order by e.id) as endpoint_ids
       from queued q join webhook_endpoints e on e.key_id = q.key_id and e.enabled and e.created_at <= q.created_at
      where not exists (select 1 from webhook_deliveries d where d.submission_id = q.id and d.endpoint_id = e.id and d.event = 'submission.created')
      group by q.id, q.created_at
      order by q.created_at, q.id limit ${Math.floor(limit)}`,
    after ? [staleAfterMs / 1000, after.created_at, after.id] : [staleAfterMs / 1000],
  );
}

/** The delivery with what its POST needs: its endpoint, its submission and the submission's key. */
export const findDeliveryToSend = (em: EntityManager, id: string) =>
  em.findOneOrFail(WebhookDeliverySchema, id, { populate: ['endpoint', 'submission', 'submission.key'] });

/**
 * A `submission.bounced` delivery to each enabled generic endpoint of the key (chat channels are told
 * of new messages only); their ids, to enqueue after the commit.
 */
export async function addBouncedEvents(client: pg.PoolClient, submissionId: string, keyId: string): Promise<string[]> {
  const { rows } = await client.query<{ id: string }>(
    `insert into webhook_deliveries (id, endpoint_id, submission_id, event)
     select gen_random_uuid(), e.id, $1, 'submission.bounced' from webhook_endpoints e where e.key_id = $2 and e.enabled and e.kind = 'webhook'
     returning id`,
    [submissionId, keyId],
  );
  return rows.map((row) => row.id);
}
