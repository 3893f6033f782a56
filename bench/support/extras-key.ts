// The key with every extra an owner can add, made through the service's own code as an owner's
// changes would make it: an autoresponse on, the most added recipients a key may have, each of them
// confirmed, and one Slack channel (at the benchmark's stand-in on loopback, which the SSRF guard
// lets through only with WEBHOOK_ALLOW naming it); or the same without the channel. Scenario 13's
// is an operator's high-volume key besides, whose autoresponses go to every visitor it drains.
import type { MikroORM } from '../../src/shared/infra/db/orm.ts';
import { createErasedForm, type KeyVault } from '../../src/shared/infra/secrets.ts';
import { generateKey } from '../../src/shared/keys/keys.ts';
import { updateKeySettings } from '../../src/shared/autoresponses/autoresponse-settings.ts';
import { confirmRecipient, MAX_ADDED_RECIPIENTS, recipientsOfKeys, setRecipients } from '../../src/shared/recipients/recipients.ts';
import { parseAllowList } from '../../src/shared/webhooks/address-guard.ts';
import { createChatChannel } from '../../src/shared/webhooks/webhooks.ts';
import { BENCH_OWNER } from '../floor/message.ts';

/** What the workers' SSRF guard must allow for the chat stand-in (the worker's WEBHOOK_ALLOW). */
export const CHAT_STAND_IN_ALLOW = '127.0.0.1';
/** Emails one submission of the extras key makes: the owner's, a copy to each added recipient, and the autoresponse. */
export const EXTRAS_EMAILS_PER_SUBMISSION = 1 + MAX_ADDED_RECIPIENTS + 1;

export type ExtrasKeyOptions = {
  /** Where its Slack channel posts; none without. */
  chatUrl?: string;
  /**
   * An operator's high-volume key: its captcha ALTCHA, asked for an hour already (an autoresponse
   * answers only a submission made a minute or more after the key's captcha was asked for), its
   * autoresponse approved by the operator (the most per day from its first day), and a year old:
   * its owner's keys together may send twice the most a key may, where a new owner's send twice a
   * new key's bound, whatever the operator approved (src/shared/autoresponses/daily-bounds.ts).
   */
  highVolume?: boolean;
};

/**
 * Creates the key (its owner BENCH_OWNER, whose mailbox the caller confirms) and returns it. `team`
 * names its recipients' domain: an address is asked to confirm for a few keys a day only.
 */
export async function createExtrasKey(orm: MikroORM, vault: KeyVault, team: string, options: ExtrasKeyOptions = {}): Promise<{ id: string; value: string }> {
  const created = await generateKey(orm.em.fork(), vault, { email: BENCH_OWNER, emailsPerHour: 1_000 });
  const key = created.key;
  await updateKeySettings(orm.em.fork(), key.keyHash, {
    label: 'Contact page',
    autoresponse: {
      enabled: true,
      subject: 'Thank you for your message',
      text: 'We have received your message and will answer within two working days.\n\nThe team at Analytical Engines Ltd',
    },
    // As the owner's and the operator's PATCHes set them.
    ...(options.highVolume ? { captcha: 'altcha', autoresponseReview: 'approved' } : {}),
  });
  if (options.highVolume) {
    // An hour of its captcha and a year of its age, which only time gives a key.
    const backdate = `update verification_keys set captcha_required_since = now() - interval '1 hour', created_at = now() - interval '1 year' where id = ?`;
    await orm.em.fork().execute(backdate, [key.id]);
  }
  const addresses = Array.from({ length: MAX_ADDED_RECIPIENTS }, (_, index) => `colleague-${index + 1}@${team}`);
  await setRecipients(orm.em.fork(), { id: key.id, mailbox: key.mailbox, status: key.status }, addresses, {
    emailsPerHour: 1_000,
    erasedForm: createErasedForm('extras-key'),
  });
  for (const recipient of (await recipientsOfKeys(orm.em.fork(), [key.id])).get(key.id) ?? []) await confirmRecipient(orm.em.fork(), recipient.id);
  if (options.chatUrl) {
    await createChatChannel(
      orm.em.fork(),
      vault,
      key.id,
      { kind: 'slack', url: options.chatUrl },
      parseAllowList([CHAT_STAND_IN_ALLOW]),
      'https://api.telegram.org',
    );
  }
  return { id: key.id, value: created.keyValue };
}
