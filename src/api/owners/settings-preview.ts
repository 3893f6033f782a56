// POST /owner/keys/:keyId/preview: the settings page's previews of what the owner is typing, as
// JSON, for the page's script (src/api/assets/owner.js). It saves nothing; what would be refused on
// saving (an unknown placeholder, a text too long) comes back as the reason, in place of that preview.
// Its cost is a page's: one lookup of the key, then rendering texts of a few hundred characters.
import { parseAutoresponseSubject, parseAutoresponseText } from '../../shared/autoresponses/autoresponse-settings.ts';
import { parseEmailSubject } from '../../shared/keys/email-layout.ts';
import { KeyRuleError, parseLabel } from '../../shared/keys/keys.ts';
import type { RouteContext } from '../context.ts';
import { ownedKey } from './access.ts';
import { chrome, notFoundPage } from './owner-pages.ts';
import { ownerState } from './session.ts';
import { typedSettings } from './settings-form.ts';
import { autoresponsePreview, emailPreview } from './settings-previews.ts';

/** The value as it would be saved, or the reason it would be refused. */
function parsed<T>(parse: () => T): { value: T } | { refused: string } {
  try {
    return { value: parse() };
  } catch (error) {
    if (error instanceof KeyRuleError) return { refused: error.message };
    throw error;
  }
}

export function settingsPreviewHandler() {
  return async function settingsPreview(ctx: RouteContext) {
    const key = await ownedKey(ctx.state.em, chrome(ctx).email, ctx.params.keyId ?? '');
    if (!key) return notFoundPage(ctx);
    const typed = typedSettings(ownerState(ctx).form!);
    const label = parsed(() => parseLabel(typed.label));
    const pattern = parsed(() => parseEmailSubject(typed.email_subject));
    const subject = parsed(() => parseAutoresponseSubject(typed.autoresponse.subject));
    const text = parsed(() => parseAutoresponseText(typed.autoresponse.text));
    const name = 'value' in label ? label.value : null;
    const names = (lines: string[]) => lines.map((line) => line.trim()).filter(Boolean);
    const email =
      'value' in pattern
        ? emailPreview({
            label: name,
            email_subject: pattern.value,
            email_field_order: names(typed.email_field_order),
            email_hidden_fields: names(typed.email_hidden_fields),
          })
        : null;
    const refusedText = 'refused' in subject ? subject.refused : 'refused' in text ? text.refused : undefined;
    const autoresponse =
      'value' in subject && 'value' in text ? autoresponsePreview({ label: name, autoresponse: { subject: subject.value, text: text.value } }) : null;
    ctx.set('Cache-Control', 'no-store');
    ctx.body = {
      email: email ?? { refused: 'refused' in pattern ? pattern.refused : '' },
      autoresponse: autoresponse
        ? { subject: autoresponse.subject, paragraphs: autoresponse.paragraphs, closing: autoresponse.closing }
        : { refused: refusedText ?? '' },
    };
  };
}
