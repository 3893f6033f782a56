// /owner/keys/:keyId/webhooks — the owner console's webhooks and chat channels of one key: add (a
// webhook's signing secret is shown on the answer to that POST, once, never in a URL; a chat
// channel's URL or bot token is never shown back but shortened), enable, disable, delete, and the
// delivery log with a re-send for failed deliveries, and a test post to one endpoint. Same guards as the other console pages.
import type Router from '@koa/router';
import { parseAllowList } from '../../shared/webhooks/address-guard.ts';
import { pageGuards } from '../owners/owner-pages.ts';
import type { AppDeps, AppState } from '../context.ts';
import { refusalsAsPage } from '../middleware/error-handler.ts';
import { createRouter } from '../router.ts';
import { addEndpoint, changeEndpoint, resendDelivery, showWebhooks } from './owner-webhook-actions.ts';
import { testPostHandler } from './owner-webhook-test-post.ts';

export function ownerWebhookRoutes(deps: AppDeps): Router<AppState> {
  const router = createRouter('/owner/keys/:keyId');
  const { signedIn, write } = pageGuards(deps);
  const webhookPolicy = parseAllowList(deps.config.WEBHOOK_ALLOW);

  router.use(refusalsAsPage('owner-error'));

  router.get('/webhooks', signedIn, (ctx) => showWebhooks(ctx, deps));
  router.post('/webhooks', ...write, (ctx) => addEndpoint(ctx, deps, webhookPolicy));
  router.post('/webhooks/:id', ...write, (ctx) => changeEndpoint(ctx, deps));
  router.post('/webhooks/:id/test', ...write, testPostHandler(deps));
  router.post('/webhook-deliveries/:id/resend', ...write, (ctx) => resendDelivery(ctx, deps));

  return router;
}
