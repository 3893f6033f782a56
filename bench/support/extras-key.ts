// The key with every extra an owner can add, made through the service's own code as an owner's
// changes would make it: an autoresponse on, the most added recipients a key may have, each of them
// confirmed, and one Slack channel (at the benchmark's stand-in on loopback, which the SSRF guard
// lets through only with WEBHOOK_ALLOW naming it); or the same without the channel.
import type { MikroORM } from '../../src/shared/infra/db/orm.ts';
import type { KeyVault } from '../../src/shared/infra/secrets.ts';
import { generateKey, updateKey } from '../../src/shared/keys/keys.ts';
import { confirmRecipient, MAX_ADDED_RECIPIENTS, recipientsOfKeys, setRecipients } from '../../src/shared/recipients/recipients.ts';
import { parseAllowList } from '../../src/shared/webhooks/address-guard.ts';
import { createChatChannel } from '../../src/shared/webhooks/webhooks.ts';
import { BENCH_OWNER } from '../floor/message.ts';

/** What the workers' SSRF guard must allow for the chat stand-in (the worker's WEBHOOK_ALLOW). */
export const CHAT_STAND_IN_ALLOW = '127.0.0.1';
/** Emails one submission of the extras key makes: the owner's, a copy to each added recipient, and the autoresponse. */
export const EXTRAS_EMAILS_PER_SUBMISSION = 1 + MAX_ADDED_RECIPIENTS + 1;

/**
 * Creates the key (its owner BENCH_OWNER, whose mailbox the caller confirms) and returns it; with
 * `chatUrl`, a Slack channel posting there. `team` names its recipients' domain: an address is asked
 * to confirm for a few keys a day only.
 */
export async function createExtrasKey(orm: MikroORM, vault: KeyVault, team: string, chatUrl?: string): Promise<{ id: string; value: string }> {
  const created = await generateKey(orm.em.fork(), vault, { email: BENCH_OWNER, emailsPerHour: 1_000 });
  const key = created.key;
  await updateKey(orm.em.fork(), key.keyHash, {
    label: 'Contact page',
    autoresponse: {
      enabled: true,
      subject: 'Thank you for your message',
      text: 'We have received your message and will answer within two working days.\n\nThe team at Analytical Engines Ltd',
    },
  });
  const addresses = Array.from({ length: MAX_ADDED_RECIPIENTS }, (_, index) => `colleague-${index + 1}@${team}`);
  await setRecipients(orm.em.fork(), { id: key.id, mailbox: key.mailbox, status: key.status }, addresses, { emailsPerHour: 1_000 });
  for (const recipient of (await recipientsOfKeys(orm.em.fork(), [key.id])).get(key.id) ?? []) await confirmRecipient(orm.em.fork(), recipient.id);
  if (chatUrl) {
    await createChatChannel(orm.em.fork(), vault, key.id, { kind: 'slack', url: chatUrl }, parseAllowList([CHAT_STAND_IN_ALLOW]), 'https://api.telegram.org');
  }
  return { id: key.id, value: created.keyValue };
}
