// The emails of POST /: a new key, and the list of every active key of an address; and the one
// "confirm to receive more" email of an address whose submissions are held (recipient consent).
// Their text is in src/workers/delivery/templates.
import type { VerificationKey } from '../../shared/keys/entities.ts';
import { renderEmail, renderText, type RenderedEmail } from './email-templates.ts';

/** A key as its emails show it: the value, opened from its sealed copy by the worker. */
export type KeyForEmail = Pick<VerificationKey, 'email' | 'useDomain' | 'domains' | 'createdAt'> & { value: string };

export function renderNewKeyEmail(key: KeyForEmail, publicUrl: string, confirmLink?: string): RenderedEmail {
  return renderEmail('new-key', 'Your contact form verification key', {
    key: key.value,
    email: key.email,
    domains: key.useDomain ? key.domains.join(', ') : '',
    confirm_link: confirmLink ?? '',
    form: renderText('example-form.text', { public_url: publicUrl, key: key.value }),
    public_url: publicUrl,
  });
}

export function renderAllKeysEmail(email: string, keys: KeyForEmail[], publicUrl: string, confirmLink?: string): RenderedEmail {
  const line = (key: KeyForEmail) =>
    `${key.value} (created ${key.createdAt.toISOString().slice(0, 10)}${key.useDomain ? `; domains: ${key.domains.join(', ')}` : ''})`;
  return renderEmail('all-keys', 'Your contact form verification keys', {
    email,
    keys: keys.map(line),
    confirm_link: confirmLink ?? '',
    public_url: publicUrl,
  });
}

export function renderConfirmEmail(email: string, confirmLink: string, perHour: number): RenderedEmail {
  return renderEmail('confirm', 'Confirm to receive your contact form messages', { email, confirm_link: confirmLink, per_hour: perHour });
}

/**
 * The request to an address an owner added to a key. It names the owner's address (proven: they
 * signed in through it) and nothing else the owner wrote: not the key's name, which anyone can set
 * to any words.
 */
export function renderRecipientConfirmEmail(email: string, ownerEmail: string, confirmLink: string): RenderedEmail {
  return renderEmail('recipient-confirm', 'Confirm to receive copies of a contact form’s messages', { email, owner: ownerEmail, confirm_link: confirmLink });
}

export function renderSignInEmail(email: string, link: string, minutes: number): RenderedEmail {
  return renderEmail('sign-in', 'Sign in to your contact form keys', { email, link, minutes });
}

export type DisabledEndpoint = { url: string; error: string };

export function renderWebhookDisabledEmail(endpoints: DisabledEndpoint[], failures: number, consoleUrl: string): RenderedEmail {
  return renderEmail('webhook-disabled', 'A webhook or chat channel of your contact form was switched off', { endpoints, failures, console: consoleUrl });
}
