// The emails' templates (src/workers/delivery/templates): each email is a pair, NAME.html.njk (escaped by
// default) and NAME.text.njk (plain text), rendered from the same data.
import { fileURLToPath } from 'node:url';
import { createTemplates } from '../../shared/infra/templates.ts';

const root = fileURLToPath(new URL('./templates/', import.meta.url));
const html = createTemplates(root, 'html');
const text = createTemplates(root, 'text');

export type RenderedEmail = { subject: string; text: string; html: string };

export function renderEmail(name: string, subject: string, data: Record<string, unknown>): RenderedEmail {
  return { subject, text: text.render(`${name}.text`, data).trim(), html: html.render(`${name}.html`, data) };
}

/** A plain-text template on its own (a part shared by several emails). */
export const renderText = (name: string, data: Record<string, unknown>) => text.render(name, data).trim();
