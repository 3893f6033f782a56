// POST /owner/keys/:keyId/autoresponse-test, "Send me this autoresponse" on a key's settings page
// (what it sends, and its bound: ./autoresponse-test.ts).
import { KeyRuleError } from '../../shared/keys/keys.ts';
import type { AppDeps, RouteContext } from '../context.ts';
import { sendAutoresponseTest } from './autoresponse-test.ts';
import { keySettingsPage } from './key-settings-page.ts';
import { chrome, notFoundPage, see } from './owner-pages.ts';
import { ownerState } from './session.ts';
import { isSettingsForm } from './settings-form.ts';

/** POST /owner/keys/:keyId/autoresponse-test: from the settings form, its page as typed, saying where the test went; else back to the page. */
export function autoresponseTestHandler(deps: AppDeps) {
  return async function autoresponseTest(ctx: RouteContext) {
    const keyId = ctx.params.keyId ?? '';
    const form = ownerState(ctx).form!;
    const email = chrome(ctx).email;
    let sent: boolean;
    try {
      sent = await sendAutoresponseTest(ctx, deps, email, keyId);
    } catch (error) {
      if (!(error instanceof KeyRuleError)) throw error;
      return keySettingsPage(ctx, deps, keyId, { refused: error, form, typed: isSettingsForm(form) });
    }
    if (!sent) return notFoundPage(ctx);
    if (!isSettingsForm(form)) return see(ctx, `/owner/keys/${keyId}/settings?notice=autoresponse-test-sent`);
    const notice = `The autoresponse as saved is on its way to ${email}, "[Test]" before its subject. The settings above are as you typed them: Save settings keeps them.`;
    await keySettingsPage(ctx, deps, keyId, { form, typed: true, notice });
  };
}
