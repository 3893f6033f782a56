// The emails of POST /: a new key, and the list of every active key of an address; and the one
// "confirm to receive more" email of an address whose submissions are held (recipient consent).
import type { VerificationKey } from '../shared/db/entities.ts';
import { escapeHtml, htmlDocument } from '../shared/html.ts';
import type { RenderedEmail } from './render.ts';

function exampleForm(publicUrl: string, key: string): string {
  return [
    `<form action="${publicUrl}/api/contact-api/" method="POST">`,
    `  <input type="hidden" name="access_key" value="${key}">`,
    '  <input type="email" name="email" required>',
    '  <textarea name="message" required></textarea>',
    '  <button type="submit">Send</button>',
    '</form>',
  ].join('\n');
}

function howToGetKeysAgain(publicUrl: string, email: string): string {
  return `To receive all your active keys again, POST {"email": "${email}", "requestType": "getKeys"} to ${publicUrl}/ (Content-Type: application/json).`;
}

/** The consent paragraph of a key email to an address that has not confirmed yet. */
function consentText(confirmLink: string): string {
  return `Until you confirm that you want them, this address receives only a few contact form messages an hour; the rest wait. Confirm here: ${confirmLink}`;
}

/** A key as its emails show it: the value, opened from its sealed copy by the worker. */
export type KeyForEmail = Pick<VerificationKey, 'email' | 'useDomain' | 'domains' | 'createdAt'> & { value: string };

export function renderNewKeyEmail(key: KeyForEmail, publicUrl: string, confirmLink?: string): RenderedEmail {
  const form = exampleForm(publicUrl, key.value);
  const domains = key.useDomain ? `It only works from these domains (and their subdomains): ${key.domains.join(', ')}.` : '';
  const again = howToGetKeysAgain(publicUrl, key.email);
  const text = [
    'Your new verification key for the contact form service:',
    '',
    `  ${key.value}`,
    '',
    'Put it in the access_key field of your contact form. Submissions are then emailed to this address.',
    ...(domains ? [domains] : []),
    ...(confirmLink ? ['', consentText(confirmLink)] : []),
    '',
    'A minimal HTML form:',
    '',
    form,
    '',
    again,
    '',
    'Keep the key out of public repositories; for server-side use, keep it in an environment variable.',
  ].join('\n');
  const html = htmlDocument(`<p>Your new verification key for the contact form service:</p>
<p style="font-family:monospace;font-size:1.2em">${escapeHtml(key.value)}</p>
<p>Put it in the <code>access_key</code> field of your contact form. Submissions are then emailed to this address.</p>
${domains ? `<p>${escapeHtml(domains)}</p>` : ''}
${confirmLink ? consentHtml(confirmLink) : ''}
<p>A minimal HTML form:</p>
<pre style="background:#f4f4f4;padding:1em">${escapeHtml(form)}</pre>
<p>${escapeHtml(again)}</p>
<p>Keep the key out of public repositories; for server-side use, keep it in an environment variable.</p>`);
  return { subject: 'Your contact form verification key', text, html };
}

function consentHtml(confirmLink: string): string {
  return `<p>Until you confirm that you want them, this address receives only a few contact form messages an hour; the rest wait.
<a href="${escapeHtml(confirmLink)}">Confirm this address</a>.</p>`;
}

export function renderAllKeysEmail(email: string, keys: KeyForEmail[], publicUrl: string, confirmLink?: string): RenderedEmail {
  const line = (key: KeyForEmail) =>
    `${key.value} (created ${key.createdAt.toISOString().slice(0, 10)}${key.useDomain ? `; domains: ${key.domains.join(', ')}` : ''})`;
  const again = howToGetKeysAgain(publicUrl, email);
  const text = [
    `The active verification keys of ${email}:`,
    '',
    ...keys.map((key) => `  ${line(key)}`),
    '',
    'Use one in the access_key field of your contact form.',
    again,
    ...(confirmLink ? ['', consentText(confirmLink)] : []),
  ].join('\n');
  const html = htmlDocument(`<p>The active verification keys of ${escapeHtml(email)}:</p>
<ul style="font-family:monospace">${keys.map((key) => `<li>${escapeHtml(line(key))}</li>`).join('')}</ul>
<p>Use one in the <code>access_key</code> field of your contact form.</p>
<p>${escapeHtml(again)}</p>
${confirmLink ? consentHtml(confirmLink) : ''}`);
  return { subject: 'Your contact form verification keys', text, html };
}

export function renderConfirmEmail(email: string, confirmLink: string, perHour: number): RenderedEmail {
  const intro = `Messages are being sent to ${email} through this contact form service, more than the ${perHour} an hour that an address receives before it confirms it wants them. The others are waiting.`;
  const text = [
    intro,
    '',
    `To receive them, and every later one, confirm here: ${confirmLink}`,
    '',
    'If you did not ask for a key for a contact form, ignore this email: the waiting messages expire and this is the only time you are asked.',
  ].join('\n');
  const html = htmlDocument(`<p>${escapeHtml(intro)}</p>
<p><a href="${escapeHtml(confirmLink)}">Confirm to receive them</a>, and every later one.</p>
<p>If you did not ask for a key for a contact form, ignore this email: the waiting messages expire and this is the only time you are asked.</p>`);
  return { subject: 'Confirm to receive your contact form messages', text, html };
}
