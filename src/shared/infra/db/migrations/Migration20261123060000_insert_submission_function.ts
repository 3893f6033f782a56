import { Migration } from '@mikro-orm/migrations';

/**
 * A submission with files (or webhooks) is saved by one call of this function: the quota charge
 * (when `p_charge_bytes` is not null), the row, its webhook deliveries and its attachments, in one
 * statement and so one implicit transaction, as the data-modifying CTE it replaces. PL/pgSQL keeps
 * each inner statement's plan for the session, where the CTE sent as text was parsed and planned
 * on every request, at a cost in PostgreSQL CPU on each submission with files
 * (docs/benchmarks.md#changes-that-moved-a-figure). Returns false, having written nothing, when the
 * charge would pass the quota.
 */
export class Migration20261123060000_insert_submission_function extends Migration {
  override name = 'Migration20261123060000_insert_submission_function';

  override up(): void | Promise<void> {
    this.addSql(`create function "cfs_insert_submission"(
  p_charge_bytes bigint, p_quota_bytes bigint,
  p_id uuid, p_key_id uuid, p_email text, p_message text, p_subject text, p_custom_fields jsonb,
  p_email_status text, p_client_ip text, p_origin text,
  p_webhook_ids uuid[], p_endpoint_ids uuid[], p_files jsonb
) returns boolean language plpgsql as $fn$
begin
  if p_charge_bytes is not null then
    update verification_keys set stored_bytes = stored_bytes + p_charge_bytes
     where id = p_key_id and stored_bytes + p_charge_bytes <= p_quota_bytes;
    if not found then
      return false;
    end if;
  end if;
  insert into submissions (id, key_id, email, message, subject, custom_fields, email_status, client_ip, origin)
  values (p_id, p_key_id, p_email, p_message, p_subject, p_custom_fields, p_email_status, p_client_ip, p_origin);
  -- An endpoint disabled or deleted since the key was read gets no row.
  insert into webhook_deliveries (id, endpoint_id, submission_id)
  select h.id, h.endpoint_id, p_id
    from unnest(p_webhook_ids, p_endpoint_ids) as h(id, endpoint_id)
    join webhook_endpoints e on e.id = h.endpoint_id and e.enabled;
  insert into attachments (id, submission_id, field_name, filename, content_type, size, storage_key, sha256, created_at)
  select gen_random_uuid(), p_id, f.field_name, f.filename, f.content_type, f.size, f.storage_key, f.sha256,
         clock_timestamp() -- increases row by row, so the files keep their order
    from rows from (jsonb_to_recordset(p_files)
           as (field_name text, filename text, content_type text, size bigint, storage_key text, sha256 text))
         with ordinality as f(field_name, filename, content_type, size, storage_key, sha256, position)
   order by f.position;
  return true;
end
$fn$;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop function "cfs_insert_submission"(bigint, bigint, uuid, uuid, text, text, text, jsonb, text, text, text, uuid[], uuid[], jsonb);`);
  }
}
