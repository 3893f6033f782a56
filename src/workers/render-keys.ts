// The emails of POST /: a new key, and the list of every active key of an address.
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

/** A key as its emails show it: the value, opened from its sealed copy by the worker. */
export type KeyForEmail = Pick<VerificationKey, 'email' | 'useDomain' | 'domains' | 'createdAt'> & { value: string };

export function renderNewKeyEmail(key: KeyForEmail, publicUrl: string): RenderedEmail {
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
<p>A minimal HTML form:</p>
<pre style="background:#f4f4f4;padding:1em">${escapeHtml(form)}</pre>
<p>${escapeHtml(again)}</p>
<p>Keep the key out of public repositories; for server-side use, keep it in an environment variable.</p>`);
  return { subject: 'Your contact form verification key', text, html };
}

export function renderAllKeysEmail(email: string, keys: KeyForEmail[], publicUrl: string): RenderedEmail {
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
  ].join('\n');
  const html = htmlDocument(`<p>The active verification keys of ${escapeHtml(email)}:</p>
<ul style="font-family:monospace">${keys.map((key) => `<li>${escapeHtml(line(key))}</li>`).join('')}</ul>
<p>Use one in the <code>access_key</code> field of your contact form.</p>
<p>${escapeHtml(again)}</p>`);
  return { subject: 'Your contact form verification keys', text, html };
}
