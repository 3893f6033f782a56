// The verification_keys table: the statements that read, count, lock and add keys.
import type { EntityManager } from '@mikro-orm/postgresql';
import { KeyEmailSchema, VerificationKeySchema, type KeyEmail, type VerificationKey } from '../entities.ts';

/** What a submission needs of its key, and whether its mailbox confirmed it wants the mail. */
export type ActiveKey = Pick<VerificationKey, 'id' | 'email' | 'mailbox' | 'useDomain' | 'domains' | 'captcha'> & {
  mailboxConfirmed: boolean;
  /** Its enabled webhook endpoints: a submission adds one delivery row for each, in its own statement. */
  webhookEndpointIds: string[];
};

/**
 * The key whose lookup index is `keyHash`: active (what a submission needs of it), `inactive`
 * (disabled or deleted), or null where no key has it. One indexed query and no entity hydration:
 * this runs on every submission whose key is not cached (npm run bench).
 */
export async function lookUpKeyByHash(em: EntityManager, keyHash: string): Promise<ActiveKey | 'inactive' | null> {
  const [row] = await em.execute<
    Array<{
      id: string;
      email: string;
      mailbox: string;
      use_domain: boolean;
      domains: string[];
      captcha: ActiveKey['captcha'];
      confirmed: boolean;
      webhooks: string[] | null;
      active: boolean;
    }>
  >(
    `select k.id, k.email, k.mailbox, k.use_domain, k.domains, k.captcha, r.confirmed_at is not null as confirmed,
            (select array_agg(e.id) from webhook_endpoints e where e.key_id = k.id and e.enabled) as webhooks,
            k.status = 'active' as active
       from verification_keys k left join recipients r on r.mailbox = k.mailbox
      where k.key_hash = ?`,
    [keyHash],
  );
  if (!row) return null;
  return row.active
    ? {
        id: row.id,
        email: row.email,
        mailbox: row.mailbox,
        useDomain: row.use_domain,
        domains: row.domains,
        captcha: row.captcha ?? null,
        mailboxConfirmed: row.confirmed,
        webhookEndpointIds: row.webhooks ?? [],
      }
    : 'inactive';
}

/** Serialises, until the transaction ends, what counts keys and key emails of one mailbox (all its addresses). */
export async function lockMailbox(tx: EntityManager, mailbox: string): Promise<void> {
  await tx.execute('select pg_advisory_xact_lock(hashtext(?))', [`keys:${mailbox}`]);
}

/** Locks the key's row until the transaction ends, so that what is added to the key is counted one at a time. */
export async function lockKeyRow(tx: EntityManager, keyId: string): Promise<void> {
  await tx.execute('select id from verification_keys where id = ? for update', [keyId]);
}

/** The address's keys that are not deleted (a disabled key can be enabled again). */
export const countUndeletedKeys = (tx: EntityManager, email: string) => tx.count(VerificationKeySchema, { email, status: { $ne: 'deleted' } });

export const countActiveKeys = (tx: EntityManager, email: string) => tx.count(VerificationKeySchema, { email, status: 'active' });

/** The address's keys in any state, deleted ones included. */
export const countKeysOfAddress = (tx: EntityManager, email: string) => tx.count(VerificationKeySchema, { email });

/** Adds a key and the row of its `new-key` email, in one flush. */
export async function insertKeyWithEmail(
  tx: EntityManager,
  fields: Pick<VerificationKey, 'keyHash' | 'keyEncrypted' | 'email' | 'mailbox' | 'useDomain' | 'domains'>,
): Promise<{ key: VerificationKey; keyEmail: KeyEmail }> {
  // The JSON columns named: left to their default, the ORM would store the default's text as a JSON string.
  const key = tx.create(VerificationKeySchema, { ...fields, emailFieldOrder: [], emailHiddenFields: [] });
  const keyEmail = tx.create(KeyEmailSchema, { kind: 'new-key', email: fields.email, mailbox: fields.mailbox, key });
  await tx.flush();
  return { key, keyEmail };
}

/** Every key of the (normalised) address, oldest first. */
export const findKeysOfAddress = (em: EntityManager, email: string) => em.find(VerificationKeySchema, { email }, { orderBy: { createdAt: 'asc' } });

/** The active keys of the address, oldest first. */
export const findActiveKeysOfAddress = (em: EntityManager, email: string) =>
  em.find(VerificationKeySchema, { email, status: 'active' }, { orderBy: { createdAt: 'asc' } });

/** The key whose lookup index is `keyHash`, in any state, as an entity: changes to it are written when its transaction commits. */
export const findKeyByHash = (tx: EntityManager, keyHash: string) => tx.findOne(VerificationKeySchema, { keyHash });

/** The id of the key (not deleted) whose lookup index is `keyHash`, if any. */
export async function findUndeletedKeyId(em: EntityManager, keyHash: string): Promise<string | undefined> {
  const [row] = await em.execute<Array<{ id: string }>>(`select id from verification_keys where key_hash = ? and status <> 'deleted'`, [keyHash]);
  return row?.id;
}

/** The key with this id whose address is `email`; null when there is none (not the owner's, or no such key). */
export async function findKeyOfOwner(em: EntityManager, email: string, keyId: string): Promise<VerificationKey | null> {
  return em.findOne(VerificationKeySchema, { id: keyId, email });
}
