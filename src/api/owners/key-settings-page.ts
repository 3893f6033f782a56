// /owner/keys/:keyId/settings — one key's settings on a page of its own, in sections (email,
// autoresponse, spam, captcha and sites, recipients, chat and webhooks, a test message, the key's state). Shown
// as stored, or, after a refusal or another button of its form, with what the owner typed.
import { KeyRuleError } from '../../shared/keys/keys.ts';
import { CHAT_NAMES, isChatKind } from '../../shared/webhooks/chat-channels.ts';
import { listEndpoints } from '../../shared/webhooks/webhooks.ts';
import { fromKeyRule } from '../api-errors.ts';
import type { AppContext, AppDeps } from '../context.ts';
import { renderPage, SCRIPTED_PAGE_HEADERS } from '../view.ts';
import { ownedKey } from './access.ts';
import { ownerKeyRecord, withRecipients } from './operations.ts';
import { chrome, KEYS_PAGE, notFoundPage } from './owner-pages.ts';
import { refusedField, typedSettings } from './settings-form.ts';
import { withPreviews } from './settings-previews.ts';
import { TEST_MESSAGES_PER_HOUR } from './test-message.ts';
import { AUTORESPONSE_TESTS_PER_HOUR } from './autoresponse-test.ts';

export type SettingsShown = {
  /** The form as posted: with `typed` (the settings form's), its fields are shown as typed, not as stored. */
  form?: URLSearchParams;
  typed?: boolean;
  /** A change refused: said at the top and next to the field it names. */
  refused?: KeyRuleError;
  notice?: string;
  /** The test message just sent: the page links to it. */
  testMessage?: string;
};

export async function keySettingsPage(ctx: AppContext, deps: AppDeps, keyId: string, shown: SettingsShown = {}): Promise<void> {
  const page = chrome(ctx);
  const em = ctx.state.em;
  // A refused change may be left on the key in memory: the page reads the key as stored.
  if (shown.refused) em.clear();
  const key = await ownedKey(em, page.email, keyId);
  if (!key) return notFoundPage(ctx);
  const [stored] = await withRecipients(em, [ownerKeyRecord(key, deps)]);
  const saved = withPreviews(stored!);
  const endpoints = (await listEndpoints(em, key.id)).map((endpoint) => ({
    ...endpoint,
    platform: isChatKind(endpoint.kind) ? CHAT_NAMES[endpoint.kind] : 'Webhook',
  }));
  const form = shown.form ?? new URLSearchParams();
  const field = shown.refused ? refusedField(shown.refused, form) : undefined;
  renderPage(
    ctx,
    'owner-key-settings',
    {
      ...page,
      ...KEYS_PAGE,
      key: shown.typed ? { ...saved, ...typedSettings(form) } : saved,
      saved,
      endpoints,
      held_ttl_days: deps.config.HELD_TTL_DAYS,
      autoresponse_new_key_per_day: deps.config.AUTORESPONSES_NEW_KEY_PER_DAY,
      autoresponse_key_per_day: deps.config.AUTORESPONSES_KEY_PER_DAY,
      notice: shown.notice ?? page.notice,
      error: shown.refused?.message ?? '',
      field_error: field ? { field, message: shown.refused!.message } : {},
      test_message: shown.testMessage ?? '',
      test_messages_per_hour: TEST_MESSAGES_PER_HOUR,
      autoresponse_tests_per_hour: AUTORESPONSE_TESTS_PER_HOUR,
    },
    { headers: SCRIPTED_PAGE_HEADERS, ...(shown.refused ? { status: fromKeyRule(shown.refused).status } : {}) },
  );
}
