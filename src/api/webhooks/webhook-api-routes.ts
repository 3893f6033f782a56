// A key's webhooks as JSON: endpoints (list, add a generic webhook or a chat channel, enable or
// disable, delete) and the delivery log with re-send. One set of handlers (webhook-api-handlers.ts)
// for the owner API (/owner/api/keys/:keyId, the session's key) and the operator API
// (/admin/keys/:key, any key by its value); they differ only in how the key is found and who may
// write, given as a WebhookAccess.
import type Router from '@koa/router';
import type { Middleware } from 'koa';
import { parseAllowList } from '../../shared/webhooks/address-guard.ts';
import { keyIdByValue } from '../../shared/webhooks/webhooks.ts';
import type { AppDeps, AppState, RouteContext } from '../context.ts';
import { errors } from '../api-errors.ts';
import { jsonObjectBody } from '../middleware/json-body.ts';
import { ownedKey } from '../owners/access.ts';
import { crossSiteGuard, csrfGuard, optionalJsonBody, ownerState, requireOwner } from '../owners/session.ts';
import { createRouter } from '../router.ts';
import {
  createWebhook,
  listDeliveries,
  listWebhooks,
  patchWebhook,
  removeWebhook,
  resendDelivery,
  type WebhookAccess,
  type WebhookApi,
} from './webhook-api-handlers.ts';
import { testPostApiHandler } from './owner-webhook-test-post.ts';

/** The session's key named in the path; another owner's key is answered as unknown (404). */
export function ownerWebhookApiRoutes(deps: AppDeps): Router<AppState> {
  const signedIn = requireOwner(deps, 'api');
  const findKey: Middleware<AppState> = async (ctx, next) => {
    const key = await ownedKey(ctx.state.em, ownerState(ctx).owner!.email, (ctx as RouteContext).params.keyId ?? '');
    if (!key) throw errors.notFound('Not found.');
    ownerState(ctx).keyId = key.id;
    await next();
  };
  const write = [crossSiteGuard(deps.config.PUBLIC_URL), signedIn, csrfGuard(deps.config.SECRET)];
  const router = webhookApiRoutes(deps, {
    prefix: '/owner/api/keys/:keyId',
    read: [signedIn],
    write,
    findKey,
    keyId: async (ctx) => ownerState(ctx).keyId!,
    resendBody: [optionalJsonBody],
    noStore: true,
    unknownWebhook: 'Not found.',
    unknownDelivery: 'Not found.',
  });
  // The owner's alone: a test post is the key owner's check of an endpoint they set up.
  router.post('/webhooks/:id/test', ...write, testPostApiHandler(deps));
  return router;
}

/** Any key, by its value in the path; behind the admin token like the rest of /admin. */
export function adminWebhookApiRoutes(deps: AppDeps): Router<AppState> {
  return webhookApiRoutes(deps, {
    prefix: '/admin/keys/:key',
    read: [],
    write: [],
    keyId: (ctx) => keyIdByValue(ctx.state.em, deps.vault, ctx.params.key ?? ''),
    resendBody: [],
    noStore: false,
    unknownWebhook: 'Unknown webhook.',
    unknownDelivery: 'No failed delivery of this key with that id.',
  });
}

function webhookApiRoutes(deps: AppDeps, access: WebhookAccess): Router<AppState> {
  const router = createRouter(access.prefix);
  const json = jsonObjectBody(() => errors.unsupportedMediaType(['application/json']));
  const api: WebhookApi = { deps, access, policy: parseAllowList(deps.config.WEBHOOK_ALLOW) };
  const keyFound = access.findKey ? [access.findKey] : [];

  router.get('/webhooks', ...access.read, ...keyFound, (ctx) => listWebhooks(ctx, api));
  router.post('/webhooks', ...access.write, json, ...keyFound, (ctx) => createWebhook(ctx, api));
  router.patch('/webhooks/:id', ...access.write, json, ...keyFound, (ctx) => patchWebhook(ctx, api));
  router.delete('/webhooks/:id', ...access.write, ...keyFound, (ctx) => removeWebhook(ctx, api));
  router.get('/webhook-deliveries', ...access.read, ...keyFound, (ctx) => listDeliveries(ctx, api));
  router.post('/webhook-deliveries/:id/resend', ...access.write, ...access.resendBody, ...keyFound, (ctx) => resendDelivery(ctx, api));

  return router;
}
