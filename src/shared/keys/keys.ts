// Verification-key rules shared by the API and the operator CLI: creation under the per-address
// limit, the state transitions, domain lists and the key record shown to operators.
import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { CaptchaProvider, KeyEmail, KeyStatus, VerificationKey } from './entities.ts';
import type { SpamFilterLevel } from '../words/spam-kinds.ts';
import type { KeyVault } from '../infra/secrets.ts';
import { mailboxOf } from './consent.ts';
import { parseEmailSubject, parseFieldNames, type EmailFilesMode } from './email-layout.ts';
import { EmailCapError, KeyRuleError } from './key-rule-error.ts';
import { inTransaction } from '../infra/db/transactions.ts';
import { hasForbiddenInLine } from './owner-text.ts';
import type { AutoresponseReview } from '../words/autoresponse-kinds.ts';
import {
  countActiveKeys,
  countUndeletedKeys,
  findKeyByHash,
  findKeysOfAddress,
  insertKeyWithEmail,
  lockMailbox,
  lookUpKeyByHash,
  type ActiveKey,
} from './data/verification-keys.ts';
import { insertAllKeysEmail, keyEmailsLastHour, type EmailAllowance } from './data/key-emails.ts';

export const MAX_ACTIVE_KEYS = 10;
export const MAX_DOMAINS = 20;

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
      throw new KeyRuleError(
        'invalid',
        'domains',
        // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- JSON.stringify gives undefined for undefined, a function or a symbol; its declared type says string
        `Not a host name: ${JSON.stringify(input)?.slice(0, 100)}. Give names such as example.com, without scheme, path or port.`,
      );
    }
    return domain;
  });
  return [...new Set(domains)];
}

export { EmailCapError, KeyRuleError, lockMailbox, type ActiveKey, type EmailAllowance };

/** The key with this value: active (it may authenticate a submission), `inactive`, or null where there is none (one indexed query). */
export const lookUpKey = (em: EntityManager, vault: KeyVault, key: string): Promise<ActiveKey | 'inactive' | null> => lookUpKeyByHash(em, vault.hash(key));

/**
 * At most `perHour` emails of one allowance to one mailbox per hour, whatever spelling of the
 * address asked (checked under the mailbox's lock).
 */
export async function checkEmailCap(tx: EntityManager, mailbox: string, perHour: number, allowance: EmailAllowance): Promise<void> {
  const row = await keyEmailsLastHour(tx, mailbox, allowance);
  if (row && row.sent >= perHour) {
    throw new EmailCapError(Math.max(1, row.retry_after ?? 3600));
  }
}

/**
 * Creates a key and the row of its email in one transaction. The limit counts every key of the
 * address that is not deleted (a disabled key can be enabled again), and is checked before the
 * email cap, so the 11th key gets the spec's limit error; the mailbox's advisory lock makes the
 * count-then-insert safe under concurrency.
 */
export async function generateKey(
  em: EntityManager,
  vault: KeyVault,
  request: { email: string; domains?: string[]; emailsPerHour: number },
): Promise<{ key: VerificationKey; keyValue: string; activeKeys: number; keyEmail: KeyEmail }> {
  const email = normaliseEmail(request.email);
  const mailbox = mailboxOf(email);
  const domains = request.domains ?? [];
  return inTransaction(em, async (tx) => {
    await lockMailbox(tx, mailbox);
    const held = await countUndeletedKeys(tx, email);
    if (held >= MAX_ACTIVE_KEYS) {
      throw new KeyRuleError('limit', 'email', `You have reached the maximum of ${MAX_ACTIVE_KEYS} active keys.`);
    }
    await checkEmailCap(tx, mailbox, request.emailsPerHour, 'key-emails');
    const keyValue = randomUUID();
    const { key, keyEmail } = await insertKeyWithEmail(tx, {
      keyHash: vault.hash(keyValue),
      keyEncrypted: vault.encrypt(keyValue),
      email,
      mailbox,
      useDomain: domains.length > 0,
      domains,
    });
    const activeKeys = await countActiveKeys(tx, email);
    return { key, keyValue, activeKeys, keyEmail };
  });
}

/** Records an email listing every active key of the address; none when it has no active key. */
export async function requestAllKeysEmail(
  em: EntityManager,
  request: { email: string; emailsPerHour: number },
): Promise<{ activeKeys: number; keyEmail: KeyEmail | undefined }> {
  const email = normaliseEmail(request.email);
  const mailbox = mailboxOf(email);
  return inTransaction(em, async (tx) => {
    await lockMailbox(tx, mailbox);
    await checkEmailCap(tx, mailbox, request.emailsPerHour, 'key-emails');
    const activeKeys = await countActiveKeys(tx, email);
    if (activeKeys === 0) return { activeKeys, keyEmail: undefined };
    const keyEmail = await insertAllKeysEmail(tx, email, mailbox);
    return { activeKeys, keyEmail };
  });
}

export const listKeys = (em: EntityManager, email: string) => findKeysOfAddress(em, normaliseEmail(email));

/** Which state may follow which: active ↔ disabled; either → deleted, which is final. */
const TRANSITIONS: Record<KeyStatus, KeyStatus[]> = {
  active: ['disabled', 'deleted'],
  disabled: ['active', 'deleted'],
  deleted: [],
};

export type KeyChanges = {
  status?: KeyStatus;
  useDomain?: boolean;
  domains?: string[];
  captcha?: CaptchaProvider | null;
  spamFilter?: SpamFilterLevel;
  spamToWebhooks?: boolean;
  /** The owner's name for the key; null or blank removes it. */
  label?: string | null;
  subjectPrefix?: boolean;
  /** The operator's review of the autoresponse (admin API only). */
  autoresponseReview?: AutoresponseReview | null;
  /** The email's layout: a subject pattern (null or blank: the default), fields first or left out, files attached or linked. */
  emailSubject?: string | null;
  emailFieldOrder?: string[];
  emailHiddenFields?: string[];
  emailFiles?: EmailFilesMode;
};

/** A key label's longest length, in characters: a page title's or a subject prefix's worth. */
export const KEY_LABEL_MAX = 100;

/** A label as stored: trimmed, null when blank; one line of at most KEY_LABEL_MAX characters, or a KeyRuleError. */
export function parseLabel(label: string | null): string | null {
  const trimmed = (label ?? '').trim();
  if (trimmed === '') return null;
  // One line: it goes into page titles and, if the owner asks, into email subjects (a header). The C1
  // controls too: U+0085 is a line break to some readers, U+009B a terminal's escape. Visitors see
  // it in the autoresponse, so no bidi control may reorder what they read.
  if (hasForbiddenInLine(trimmed)) throw new KeyRuleError('invalid', 'label', 'A label is one line: no line breaks, control or text-direction characters.');
  if (Array.from(trimmed).length > KEY_LABEL_MAX) throw new KeyRuleError('invalid', 'label', `A label has at most ${KEY_LABEL_MAX} characters.`);
  return trimmed;
}

/**
 * A change of a setting a later feature owns (the autoresponse: src/shared/autoresponses), made to
 * the key in the same transaction once its domains are changed; it throws a KeyRuleError to refuse.
 */
export type FeatureChange = (key: VerificationKey) => void;

/** Changes the key whose lookup index is `keyHash` (KeyVault.hash of its value). */
export async function updateKey(em: EntityManager, keyHash: string, changes: KeyChanges, featureChange?: FeatureChange): Promise<VerificationKey> {
  return inTransaction(em, async (tx) => {
    const key = await findKeyByHash(tx, keyHash);
    if (!key) throw new KeyRuleError('not_found', 'key', 'Unknown key.');
    const current: KeyStatus = key.status;
    if (changes.status && changes.status !== current) {
      if (!TRANSITIONS[current].includes(changes.status)) {
        throw new KeyRuleError('invalid', 'status', `A ${current} key cannot become ${changes.status}.`);
      }
      key.status = changes.status;
    } else if (
      current === 'deleted' &&
      (changes.useDomain !== undefined ||
        changes.domains !== undefined ||
        changes.captcha !== undefined ||
        changes.spamFilter !== undefined ||
        changes.spamToWebhooks !== undefined ||
        changes.label !== undefined ||
        changes.subjectPrefix !== undefined ||
        featureChange !== undefined ||
        changes.autoresponseReview !== undefined ||
        changes.emailSubject !== undefined ||
        changes.emailFieldOrder !== undefined ||
        changes.emailHiddenFields !== undefined ||
        changes.emailFiles !== undefined)
    ) {
      throw new KeyRuleError('invalid', 'status', 'A deleted key cannot be changed.');
    }
    if (changes.captcha !== undefined) key.captcha = changes.captcha;
    if (changes.label !== undefined) key.label = parseLabel(changes.label);
    if (changes.subjectPrefix !== undefined) key.subjectPrefix = changes.subjectPrefix;
    // Domains first: the autoresponse's links are checked against the key's new domains.
    if (changes.domains !== undefined) key.domains = changes.domains;
    featureChange?.(key);
    if (changes.autoresponseReview !== undefined) key.autoresponseReview = changes.autoresponseReview;
    if (changes.emailSubject !== undefined) key.emailSubject = parseEmailSubject(changes.emailSubject);
    if (changes.emailFieldOrder !== undefined) key.emailFieldOrder = parseFieldNames(changes.emailFieldOrder, 'email_field_order');
    if (changes.emailHiddenFields !== undefined) key.emailHiddenFields = parseFieldNames(changes.emailHiddenFields, 'email_hidden_fields');
    if (changes.emailFiles !== undefined) key.emailFiles = changes.emailFiles;
    if (changes.spamFilter !== undefined) key.spamFilter = changes.spamFilter;
    if (changes.spamToWebhooks !== undefined) key.spamToWebhooks = changes.spamToWebhooks;
    if (changes.useDomain !== undefined) key.useDomain = changes.useDomain;
    else if (changes.domains !== undefined) key.useDomain = changes.domains.length > 0;
    if (key.useDomain && key.domains.length === 0) {
      throw new KeyRuleError('invalid', 'domains', 'A key restricted to domains needs at least one domain.');
    }
    return key;
  });
}

/**
 * Why a key's value is missing from its record: its sealed copy does not open under this SECRET.
 * Every process refuses to start with another SECRET than the data's (secret-check.ts), so this is
 * one damaged or foreign row, shown as such rather than failing the whole list.
 */
export const KEY_UNAVAILABLE = 'key unavailable: its stored copy does not open under this SECRET (sealed under another one, or damaged), so it cannot be shown';

/** A key's autoresponse settings as the APIs show them. */
export const autoresponseRecord = (key: VerificationKey) => ({
  enabled: key.autoresponseEnabled,
  subject: key.autoresponseSubject ?? null,
  text: key.autoresponseText ?? null,
  review: key.autoresponseReview ?? null,
});

/** The key record as operators see it (API and CLI); `key` is null, and `key_unavailable` says why, when it cannot be read. */
export function keyRecord(key: VerificationKey, vault: KeyVault) {
  const value = vault.tryDecrypt(key.keyEncrypted);
  return {
    key: value ?? null,
    label: key.label ?? null,
    subject_prefix: key.subjectPrefix,
    autoresponse: autoresponseRecord(key),
    email_subject: key.emailSubject ?? null,
    email_field_order: key.emailFieldOrder,
    email_hidden_fields: key.emailHiddenFields,
    email_files: key.emailFiles,
    ...(value === undefined ? { key_unavailable: KEY_UNAVAILABLE } : {}),
    status: key.status,
    email: key.email,
    use_domain: key.useDomain,
    domains: key.domains,
    captcha: key.captcha ?? null,
    spam_filter: key.spamFilter,
    spam_to_webhooks: key.spamToWebhooks,
    created_at: key.createdAt.toISOString(),
    updated_at: key.updatedAt.toISOString(),
  };
}

// What the API, the workers, the CLI and the other features call of this feature's data modules
// (they import no data module of another feature: test/unit/module-boundaries.test.ts).
export { listenForKeyChanges } from './data/key-changes.ts';
export {
  autoresponseTestsLastHour,
  findKeyEmailWithKey,
  insertAutoresponseTestEmail,
  insertConfirmEmail,
  insertRecipientConfirmEmail,
  recipientConfirmsLastDay,
} from './data/key-emails.ts';
export { claimConfirmRequest, deleteOldAllowances, isConfirmed, takeAllowance } from './data/mailbox-consent.ts';
export { countKeysOfAddress, findActiveKeysOfAddress, findKeyOfOwner, findUndeletedKeyId, lockKeyRow } from './data/verification-keys.ts';
