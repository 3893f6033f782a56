// The writes of a key's settings page: save, disable, enable, delete (one form, its buttons), and
// add or remove one of the key's recipients. Pressed from the settings form, a button that is not
// Save answers with the page as typed, so nothing typed above it is lost; a refusal does the same
// and names the field. Without the form (an older page, a script), each redirects as before.
import { mailboxOf } from '../../shared/keys/consent.ts';
import { KeyRuleError } from '../../shared/keys/keys.ts';
import type { RecipientsEdit } from '../../shared/recipients/recipients.ts';
import { errors } from '../api-errors.ts';
import type { AppDeps, RouteContext } from '../context.ts';
import { keySettingsPage } from './key-settings-page.ts';
import { changeOwnerKey, type OwnerKeyChanges } from './operations.ts';
import { chrome, NOTICES, notFoundPage, see } from './owner-pages.ts';
import { ownerState } from './session.ts';
import { isSettingsForm, settingsOf } from './settings-form.ts';
import { sendTestMessage } from './test-message.ts';

const KEY_ACTIONS = {
  save: 'saved',
  disable: 'disabled',
  enable: 'enabled',
  delete: 'deleted',
} as const;

/** Said after a button other than Save, when the page comes back with what was typed. */
const TYPED_KEPT = 'The settings above are as you typed them: Save settings keeps them.';

/** What a change leads to: the page as typed (from the settings form), or a redirect to the page that shows it. */
async function afterChange(ctx: RouteContext, deps: AppDeps, keyId: string, notice: keyof typeof NOTICES, saved: boolean) {
  const form = ownerState(ctx).form!;
  if (!saved && isSettingsForm(form)) {
    // The address just added is in the list now, not in the box.
    const typed = new URLSearchParams(form);
    typed.delete('email');
    return keySettingsPage(ctx, deps, keyId, { form: typed, typed: true, notice: `${NOTICES[notice]} ${TYPED_KEPT}` });
  }
  see(ctx, `/owner/keys/${keyId}/settings?notice=${notice}`);
}

/** Runs a change of the key; a KeyRuleError is answered with the settings page, as typed when from its form. */
async function changeOrRefuse(ctx: RouteContext, deps: AppDeps, changes: () => OwnerKeyChanges): Promise<'changed' | 'answered'> {
  const keyId = ctx.params.keyId ?? '';
  const form = ownerState(ctx).form!;
  try {
    const changed = await changeOwnerKey(ctx, deps, chrome(ctx).email, keyId, changes());
    if (changed) return 'changed';
    notFoundPage(ctx);
  } catch (error) {
    if (!(error instanceof KeyRuleError) || error.code === 'not_found') throw error;
    await keySettingsPage(ctx, deps, keyId, { refused: error, form, typed: isSettingsForm(form) });
  }
  return 'answered';
}

/** POST /owner/keys/:keyId: the settings form's buttons. */
export function keyActionHandler(deps: AppDeps) {
  return async function keyAction(ctx: RouteContext) {
    const keyId = ctx.params.keyId ?? '';
    const form = ownerState(ctx).form!;
    const action = form.get('action') ?? 'save';
    if (!(action in KEY_ACTIONS)) throw errors.invalidFields({ action: ['Must be save, disable, enable or delete.'] });
    const outcome = await changeOrRefuse(ctx, deps, () => {
      // Deleting is final: the form asks for a tick as well, since a page without script cannot ask twice.
      if (action === 'delete' && form.get('confirm_delete') !== 'yes') {
        throw new KeyRuleError('invalid', 'confirm_delete', 'To delete the key, tick "Yes, delete this key for good" and press Delete again.');
      }
      if (action === 'save') return settingsOf(form);
      return { status: action === 'disable' ? 'disabled' : action === 'enable' ? 'active' : 'deleted' };
    });
    if (outcome === 'answered') return;
    if (action === 'delete') return see(ctx, '/owner/keys?notice=deleted');
    await afterChange(ctx, deps, keyId, KEY_ACTIONS[action as keyof typeof KEY_ACTIONS], action === 'save');
  };
}

/** One address added to the key's recipients (and asked to confirm), or one removed; the others are kept. */
async function recipientChange(ctx: RouteContext, deps: AppDeps, edit: RecipientsEdit, notice: 'recipient-added' | 'recipient-removed') {
  const outcome = await changeOrRefuse(ctx, deps, () => ({ recipients: edit }));
  if (outcome === 'changed') await afterChange(ctx, deps, ctx.params.keyId ?? '', notice, false);
}

/** POST /owner/keys/:keyId/recipients */
export function addRecipientHandler(deps: AppDeps) {
  return async function addRecipient(ctx: RouteContext) {
    const address = (ownerState(ctx).form!.get('email') ?? '').trim();
    await recipientChange(
      ctx,
      deps,
      (current) => {
        // The list would stay as it is: say so, rather than that an address was added and asked.
        if (current.some((recipient) => mailboxOf(recipient.email) === mailboxOf(address))) {
          throw new KeyRuleError('invalid', 'recipients', `${address} is one of this key's recipients already.`);
        }
        return [...current.map((recipient) => recipient.email), address];
      },
      'recipient-added',
    );
  };
}

/** POST /owner/keys/:keyId/recipients/:recipientId/remove */
export function removeRecipientHandler(deps: AppDeps) {
  return async function removeRecipient(ctx: RouteContext) {
    const removed = ctx.params.recipientId ?? '';
    await recipientChange(
      ctx,
      deps,
      (current) => current.filter((recipient) => recipient.id !== removed).map((recipient) => recipient.email),
      'recipient-removed',
    );
  };
}

/** POST /owner/keys/:keyId/test-message: from the settings form, its page as typed, with the way to the message; else the message's page. */
export function testMessageHandler(deps: AppDeps) {
  return async function testMessage(ctx: RouteContext) {
    const keyId = ctx.params.keyId ?? '';
    const form = ownerState(ctx).form!;
    let id: string | undefined;
    try {
      id = await sendTestMessage(ctx, deps, chrome(ctx).email, keyId);
    } catch (error) {
      if (!(error instanceof KeyRuleError)) throw error;
      return keySettingsPage(ctx, deps, keyId, { refused: error, form, typed: isSettingsForm(form) });
    }
    if (!id) return notFoundPage(ctx);
    if (!isSettingsForm(form)) return see(ctx, `/owner/submissions/${id}?notice=test-sent`);
    await keySettingsPage(ctx, deps, keyId, { form, typed: true, notice: `${NOTICES['test-sent']} ${TYPED_KEPT}`, testMessage: id });
  };
}
