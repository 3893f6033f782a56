// The previews of a key's settings page: the owner's email for a sample message, and the autoresponse
// a visitor would receive today. Drawn from the key as saved (the page without script) or from what
// the owner is typing (settings-preview.ts, which the page's script asks).
import { renderAutoresponse } from '../../shared/autoresponses/autoresponses.ts';
import { arrangeFields, renderSubjectPattern } from '../../shared/keys/email-layout.ts';

/** What the previews read of a key. */
export type PreviewedSettings = {
  label: string | null;
  autoresponse: { subject: string | null; text: string | null };
  email_subject: string | null;
  email_field_order: string[];
  email_hidden_fields: string[];
};

/** The autoresponse visitors would receive today, as the email's HTML part draws it; null without a subject and a text. */
export function autoresponsePreview(key: Pick<PreviewedSettings, 'label' | 'autoresponse'>) {
  const { subject, text } = key.autoresponse;
  return subject && text ? renderAutoresponse({ subject, text, label: key.label, receivedAt: new Date() }) : null;
}

/** A key with its previews: the autoresponse (none without a subject and a text) and its email for a sample. */
export function withPreviews<K extends PreviewedSettings>(key: K) {
  return { ...key, autoresponse_preview: autoresponsePreview(key), email_preview: emailPreview(key) };
}

/** The owner's email for a sample submission (its fields: the ordered ones, then a sample's own), as the worker would lay it out; the view escapes it. */
export function emailPreview(key: Omit<PreviewedSettings, 'autoresponse'>) {
  const sample = { subject: 'Question about an order', email: 'visitor@example.org', key: key.label };
  const customFields: Array<[string, string]> = [
    ['name', 'Ada Lovelace'],
    ['company', 'Example Ltd'],
  ];
  for (const name of key.email_field_order) if (!customFields.some(([other]) => other === name)) customFields.push([name, `(${name})`]);
  const fields = arrangeFields(customFields, { fieldOrder: key.email_field_order, hiddenFields: key.email_hidden_fields });
  return {
    subject: (key.email_subject ? renderSubjectPattern(key.email_subject, { ...sample, customFields }) : '') || sample.subject,
    fields: fields.map(([name, value]) => `${name}: ${value}`),
  };
}
