// /owner/keys, /owner/confirm, /owner/keys/:keyId/settings, /owner/overview — the keys of the
// signed-in address: their list with the mailbox's consent, each key's settings page (save,
// disable, enable, delete, its added recipients, a test message, an autoresponse test, the
// previews of what is typed), and the overview of messages per day, of one key or of all.
import type Router from '@koa/router';
import { OUTCOMES } from '../../shared/owners/overview.ts';
import type { AppContext, AppDeps, AppState } from '../context.ts';
import { refusalsAsPage } from '../middleware/error-handler.ts';
import { createRouter } from '../router.ts';
import { renderPage, SCRIPTED_PAGE_HEADERS } from '../view.ts';
import { barChart, OUTCOME_WORDS } from './chart.ts';
import { keySettingsPage } from './key-settings-page.ts';
import { addRecipientHandler, keyActionHandler, removeRecipientHandler, testMessageHandler } from './key-settings-actions.ts';
import { confirmOwnerMailbox, listOwnerKeys, ownerConsent, ownerOverview } from './operations.ts';
import { chrome, KEYS_PAGE, notFoundPage, pageGuards, see, TIMES } from './owner-pages.ts';
import { autoresponseTestHandler } from './send-autoresponse-test.ts';
import { ownerState } from './session.ts';
import { settingsPreviewHandler } from './settings-preview.ts';

export function ownerKeyPages(deps: AppDeps): Router<AppState> {
  const router = createRouter();
  const { signedIn, write } = pageGuards(deps);
  router.use(refusalsAsPage('owner-error'));

  router.get('/owner/keys', signedIn, (ctx) => keysPage(ctx, deps));
  router.post('/owner/confirm', ...write, async (ctx) => {
    await confirmOwnerMailbox(ctx, deps, ownerState(ctx).owner!.email);
    see(ctx, '/owner/keys?notice=confirmed');
  });
  router.get('/owner/keys/:keyId/settings', signedIn, (ctx) => keySettingsPage(ctx, deps, ctx.params.keyId ?? ''));
  router.post('/owner/keys/:keyId', ...write, keyActionHandler(deps));
  router.post('/owner/keys/:keyId/recipients', ...write, addRecipientHandler(deps));
  router.post('/owner/keys/:keyId/recipients/:recipientId/remove', ...write, removeRecipientHandler(deps));
  router.post('/owner/keys/:keyId/test-message', ...write, testMessageHandler(deps));
  router.post('/owner/keys/:keyId/preview', ...write, settingsPreviewHandler());
  router.post('/owner/keys/:keyId/autoresponse-test', ...write, autoresponseTestHandler(deps));
  router.get('/owner/overview', signedIn, (ctx) => overviewPage(ctx, deps));
  router.get('/owner/keys/:keyId/overview', signedIn, (ctx) => overviewPage(ctx, deps, ctx.params.keyId ?? ''));

  return router;
}

/** The list of the address's keys, each with its facts and the way to its settings and messages. */
async function keysPage(ctx: AppContext, deps: AppDeps) {
  const page = chrome(ctx);
  const em = ctx.state.em;
  renderPage(
    ctx,
    'owner-keys',
    { ...page, keys: await listOwnerKeys(em, deps, page.email), ...(await ownerConsent(em, deps, page.email)), ...KEYS_PAGE },
    { headers: SCRIPTED_PAGE_HEADERS },
  );
}

/** The overview: one key's messages per day, or all the address's keys' together with a line per key. */
async function overviewPage(ctx: AppContext, deps: AppDeps, keyId?: string) {
  const page = chrome(ctx);
  const found = await ownerOverview(ctx.state.em, deps, page.email, keyId);
  if (!found) return notFoundPage(ctx);
  renderPage(
    ctx,
    'owner-overview',
    {
      ...page,
      ...found,
      chart: barChart(found.overview.days),
      outcomes: OUTCOMES,
      outcome_words: OUTCOME_WORDS,
      scripts: ['/assets/owner.js'],
      ...TIMES,
    },
    { headers: SCRIPTED_PAGE_HEADERS },
  );
}
