// The submissions a visitor sent (their address in the submitter column, compared lower-cased) and
// what hangs on them: files, delivery attempts, webhook deliveries, idempotency records, spam
// campaign votes, and the ids of the rows whose jobs name them.
import type { EntityManager } from '@mikro-orm/postgresql';

/**
 * One page of the table, `size` rows in id order after `after` (undefined: from the start): the ids
 * among them whose submitter is the address, and the page's last id (undefined: the table ended).
 * No index serves the address, so the table is read page by page, each page a short statement
 * through the primary key, under the statement timeout however large the table.
 */
export async function findSubmissionIdsOfPage(
  em: EntityManager,
  address: string,
  after: string | undefined,
  size: number,
): Promise<{ ids: string[]; last: string | undefined }> {
  const [row] = await em.execute<Array<{ ids: string[]; last: string | null }>>(
    `with page as (select id, email from submissions where id > ?::uuid order by id limit ?)
     select array(select id::text from page where lower(email) = ?) as ids, (select id::text from page order by id desc limit 1) as last`,
    [after ?? '00000000-0000-0000-0000-000000000000', size, address],
  );
  return { ids: row?.ids ?? [], last: row?.last ?? undefined };
}

type JsonRow = Record<string, unknown>;
export type SubmissionRecord = { id: string; record: JsonRow };
export type RelatedRecord = { submission_id: string; record: JsonRow };

/**
 * The submissions with these ids, every stored column but the ones derived from the others for the
 * database's own use (search words, list previews), with their key's label and domains (the form
 * the visitor used; never the key or its owner).
 */
export async function readSubmissionRecords(em: EntityManager, ids: string[]): Promise<SubmissionRecord[]> {
  if (!ids.length) return [];
  return em.execute<SubmissionRecord[]>(
    `select s.id, (to_jsonb(s) - array['search_document', 'fields_preview', 'fields_truncated', 'settled', 'claimed_at', 'spam_teach_pending'])
              || jsonb_build_object('form_label', k.label, 'form_domains', k.domains) as record
       from submissions s join verification_keys k on k.id = s.key_id
      where s.id in (?) order by s.created_at, s.id`,
    [ids],
  );
}

/** The files of these submissions: their rows (storage_key names the object to read). */
export const readAttachmentRecords = (em: EntityManager, ids: string[]) =>
  related(em, `select submission_id, to_jsonb(a) - 'submission_id' as record from attachments a where submission_id in (?) order by created_at, id`, ids);

/** The attempts to email the submissions to their form's owner. */
export const readAttemptRecords = (em: EntityManager, ids: string[]) =>
  related(
    em,
    `select submission_id, to_jsonb(d) - 'submission_id' - 'worker' as record from delivery_attempts d where submission_id in (?) order by attempted_at, id`,
    ids,
  );

/** The webhook deliveries of the submissions: what was sent and when, not the owner's endpoint. */
export const readWebhookRecords = (em: EntityManager, ids: string[]) =>
  related(
    em,
    `select submission_id, jsonb_build_object('id', id, 'event', event, 'status', email_status, 'attempts', email_attempts,
            'last_response_code', last_response_code, 'created_at', created_at, 'sent_at', sent_at) as record
       from webhook_deliveries where submission_id in (?) order by created_at, id`,
    ids,
  );

/** The Idempotency-Keys the visitor's client sent with the submissions. */
export const readIdempotencyRecords = (em: EntityManager, ids: string[]) =>
  related(
    em,
    `select submission_id, jsonb_build_object('idempotency_key', idempotency_key, 'created_at', created_at) as record
       from idempotency_keys where submission_id in (?) order by created_at`,
    ids,
  );

/** The owners' spam votes on the submissions: a mark and a fingerprint of the text (numbers, not the text). */
export const readCampaignVoteRecords = (em: EntityManager, ids: string[]) =>
  related(
    em,
    `select submission_id::text as submission_id, jsonb_build_object('mark', mark, 'marked_at', marked_at) as record
       from spam_campaign_votes where submission_id in (?)`,
    ids,
  );

async function related(em: EntityManager, sql: string, ids: string[]): Promise<RelatedRecord[]> {
  return ids.length ? em.execute<RelatedRecord[]>(sql, [ids]) : [];
}

/**
 * The ids of the rows whose jobs name these submissions: their webhook deliveries, the copies to
 * their forms' added recipients, and the endpoints of their keys (a `submission.created` delivery
 * not written yet has a job under an id made of the submission's and the endpoint's).
 */
export async function findJobRowsOf(
  em: EntityManager,
  ids: string[],
): Promise<{ rowIds: string[]; endpoints: Array<{ submission_id: string; endpoint_id: string }> }> {
  if (!ids.length) return { rowIds: [], endpoints: [] };
  const rows = await em.execute<Array<{ id: string }>>(
    `select id from webhook_deliveries where submission_id in (?)
     union all select id from recipient_copies where submission_id in (?)`,
    [ids, ids],
  );
  const endpoints = await em.execute<Array<{ submission_id: string; endpoint_id: string }>>(
    `select s.id as submission_id, e.id as endpoint_id from submissions s join webhook_endpoints e on e.key_id = s.key_id where s.id in (?)`,
    [ids],
  );
  return { rowIds: rows.map((row) => row.id), endpoints };
}

/** Deletes the spam campaign votes on these submissions (they hold a fingerprint of the text and no reference the delete would follow). */
export async function deleteCampaignVotesOf(em: EntityManager, ids: string[]): Promise<void> {
  if (ids.length) await em.execute('delete from spam_campaign_votes where submission_id in (?)', [ids], 'run');
}
