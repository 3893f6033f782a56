// Verification-key rules shared by the API and the operator CLI: creation under the per-address
// limit, the state transitions, domain lists and the key record shown to operators.
import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import {
  KeyEmailSchema,
  VerificationKeySchema,
  type KeyEmail,
  type KeyStatus,
  type VerificationKey,
} from './db/entities.ts';

export const MAX_ACTIVE_KEYS = 10;
export const MAX_DOMAINS = 20;

/** A rule was broken; `field` names the input it is about. */
export class KeyRuleError extends Error {
  override name = 'KeyRuleError';
  readonly field: string;
  readonly code: 'limit' | 'invalid' | 'not_found';
  constructor(code: KeyRuleError['code'], field: string, message: string) {
    super(message);
    this.code = code;
    this.field = field;
  }
}

/** Addresses compare case-insensitively, so they are stored normalised. */
export const normaliseEmail = (email: string) => email.trim().toLowerCase();

const HOST_LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/** A host name such as `example.com`: no scheme, path, port or wildcard. Returns it lower-cased. */
export function parseDomain(input: string): string | undefined {
  const domain = input.trim().toLowerCase().replace(/\.$/, '');
  if (domain.length === 0 || domain.length > 253) return undefined;
  return domain.split('.').every((label) => HOST_LABEL.test(label)) ? domain : undefined;
}

export function parseDomains(inputs: unknown[]): string[] {
  if (inputs.length > MAX_DOMAINS) throw new KeyRuleError('invalid', 'domains', `At most ${MAX_DOMAINS} domains.`);
  const domains = inputs.map((input) => {
    const domain = typeof input === 'string' ? parseDomain(input) : undefined;
    if (!domain) {
      throw new KeyRuleError('invalid', 'domains', `Not a host name: ${JSON.stringify(input)?.slice(0, 100)}. Give names such as example.com, without scheme, path or port.`);
    }
    return domain;
  });
  return [...new Set(domains)];
}

/** The key that may authenticate a submission: known and active. */
export async function findActiveKey(em: EntityManager, key: string): Promise<VerificationKey | null> {
  return em.findOne(VerificationKeySchema, { key, status: 'active' });
}

export const countActiveKeys = (em: EntityManager, email: string) =>
  em.count(VerificationKeySchema, { email: normaliseEmail(email), status: 'active' });

/**
 * Creates a key and the row of its email in one transaction. The limit counts every key that is
 * not deleted (a disabled key can be enabled again); a per-address advisory lock makes the
 * count-then-insert safe under concurrency.
 */
export async function generateKey(
  em: EntityManager,
  rawEmail: string,
  domains: string[] = [],
): Promise<{ key: VerificationKey; activeKeys: number; keyEmail: KeyEmail }> {
  const email = normaliseEmail(rawEmail);
  return em.transactional(async (tx) => {
    await tx.execute('select pg_advisory_xact_lock(hashtext(?))', [`keys:${email}`]);
    const held = await tx.count(VerificationKeySchema, { email, status: { $ne: 'deleted' } });
    if (held >= MAX_ACTIVE_KEYS) {
      throw new KeyRuleError('limit', 'email', `You have reached the maximum of ${MAX_ACTIVE_KEYS} active keys.`);
    }
    const key = tx.create(VerificationKeySchema, {
      key: randomUUID(),
      email,
      useDomain: domains.length > 0,
      domains,
    });
    const keyEmail = tx.create(KeyEmailSchema, { kind: 'new-key', email, key });
    await tx.flush();
    const activeKeys = await tx.count(VerificationKeySchema, { email, status: 'active' });
    return { key, activeKeys, keyEmail };
  });
}

/** Records an email listing every active key of the address; none when it has no active key. */
export async function requestAllKeysEmail(
  em: EntityManager,
  rawEmail: string,
): Promise<{ activeKeys: number; keyEmail: KeyEmail | undefined }> {
  const email = normaliseEmail(rawEmail);
  return em.transactional(async (tx) => {
    const activeKeys = await tx.count(VerificationKeySchema, { email, status: 'active' });
    if (activeKeys === 0) return { activeKeys, keyEmail: undefined };
    const keyEmail = tx.create(KeyEmailSchema, { kind: 'all-keys', email });
    await tx.flush();
    return { activeKeys, keyEmail };
  });
}

export const listKeys = (em: EntityManager, email: string) =>
  em.find(VerificationKeySchema, { email: normaliseEmail(email) }, { orderBy: { createdAt: 'asc' } });

/** Which state may follow which: active ↔ disabled; either → deleted, which is final. */
const TRANSITIONS: Record<KeyStatus, KeyStatus[]> = {
  active: ['disabled', 'deleted'],
  disabled: ['active', 'deleted'],
  deleted: [],
};

export type KeyChanges = { status?: KeyStatus; useDomain?: boolean; domains?: string[] };

export async function updateKey(em: EntityManager, keyValue: string, changes: KeyChanges): Promise<VerificationKey> {
  return em.transactional(async (tx) => {
    const key = await tx.findOne(VerificationKeySchema, { key: keyValue });
    if (!key) throw new KeyRuleError('not_found', 'key', 'Unknown key.');
    const current: KeyStatus = key.status;
    if (changes.status && changes.status !== current) {
      if (!TRANSITIONS[current].includes(changes.status)) {
        throw new KeyRuleError('invalid', 'status', `A ${current} key cannot become ${changes.status}.`);
      }
      key.status = changes.status;
    } else if (current === 'deleted' && (changes.useDomain !== undefined || changes.domains !== undefined)) {
      throw new KeyRuleError('invalid', 'status', 'A deleted key cannot be changed.');
    }
    if (changes.domains !== undefined) key.domains = changes.domains;
    if (changes.useDomain !== undefined) key.useDomain = changes.useDomain;
    else if (changes.domains !== undefined) key.useDomain = changes.domains.length > 0;
    if (key.useDomain && key.domains.length === 0) {
      throw new KeyRuleError('invalid', 'domains', 'A key restricted to domains needs at least one domain.');
    }
    return key;
  });
}

/** The key record as operators see it (API and CLI). */
export function keyRecord(key: VerificationKey) {
  return {
    key: key.key,
    status: key.status,
    email: key.email,
    use_domain: key.useDomain,
    domains: key.domains,
    created_at: key.createdAt.toISOString(),
    updated_at: key.updatedAt.toISOString(),
  };
}
