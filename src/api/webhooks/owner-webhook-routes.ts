// /owner/keys/:keyId/webhooks — the owner console's webhooks of one key: add (the signing secret is
// shown on the answer to that POST, once, never in a URL), enable, disable, delete, and the
// delivery log with a re-send for failed deliveries. Same guards as the other console pages.
import type Router from '@koa/router';
import { parseAllowList } from '../../shared/webhooks/address-guard.ts';
import { KeyRuleError } from '../../shared/keys/keys.ts';
import { webhookJob } from '../../shared/submissions/delivery-jobs.ts';
import {
  createEndpoint,
  markWebhookForResend,
  MAX_WEBHOOKS,
  parseWebhookUrl,
  deleteEndpoint,
  listEndpoints,
  setEndpointEnabled,
  listWebhookDeliveries,
} from '../../shared/webhooks/webhooks.ts';
import { ownedKey } from '../owners/access.ts';
import { crossSiteGuard, csrfGuard, formBody, ownerState, requireOwner } from '../owners/session.ts';
import type { AppContext, AppDeps, AppState, RouteContext } from '../context.ts';
import { enqueueCommitted } from '../submissions/enqueue.ts';
import { ApiError, errors, fromKeyRule } from '../errors.ts';
import { createRouter } from '../router.ts';
import { renderPage } from '../view.ts';
import { clearFinishedWebhookJob } from './admin-webhook-routes.ts';

const NOTICES: Record<string, string> = {
  enabled: 'Webhook enabled: new messages are delivered to it again; re-send the failed ones below.',
  disabled: 'Webhook disabled: new messages are not delivered to it.',
  deleted: 'Webhook deleted.',
  resent: 'The delivery is queued to be sent again; its status below follows.',
};
const DELIVERIES_SHOWN = 50;

export function ownerWebhookRoutes(deps: AppDeps): Router<AppState> {
  const router = createRouter('/owner/keys/:keyId');
  const signedIn = requireOwner(deps, 'page');
  const webhookPolicy = parseAllowList(deps.config.WEBHOOK_ALLOW);
  const write = [crossSiteGuard(deps.config.PUBLIC_URL), signedIn, formBody, csrfGuard(deps.config.SECRET)];
  const see = (ctx: AppContext, path: string) => {
    ctx.status = 303;
    ctx.redirect(path);
  };
  const keyOf = async (ctx: RouteContext) => ownedKey(deps.orm.em.fork(), ownerState(ctx).owner!.email, ctx.params.keyId ?? '');
  const notFound = (ctx: AppContext) => renderPage(ctx, 'owner-not-found', { email: ownerState(ctx).owner!.email }, { status: 404 });
  const page = async (ctx: AppContext, keyId: string, extra: Record<string, unknown> = {}, status = 200) => {
    const state = ownerState(ctx);
    const key = (await ownedKey(deps.orm.em.fork(), state.owner!.email, keyId))!;
    const em = deps.orm.em.fork();
    const notice = NOTICES[typeof ctx.query.notice === 'string' ? ctx.query.notice : ''] ?? '';
    renderPage(
      ctx,
      'owner-webhooks',
      {
        email: state.owner!.email,
        csrf: state.csrf!,
        notice,
        error: '',
        key: { id: key.id, label: key.label, key: deps.vault.tryDecrypt(key.keyEncrypted) ?? null },
        endpoints: await listEndpoints(em, key.id),
        deliveries: await listWebhookDeliveries(em, { keyId: key.id, limit: DELIVERIES_SHOWN }),
        max: MAX_WEBHOOKS,
        disable_after: deps.config.WEBHOOK_DISABLE_AFTER,
        secret: '',
        created_url: '',
        ...extra,
      },
      { status },
    );
  };

  // A refusal is a page, as on the other console pages.
  router.use(async (ctx, next) => {
    try {
      await next();
    } catch (caught) {
      const error = caught instanceof KeyRuleError ? fromKeyRule(caught) : caught;
      if (!(error instanceof ApiError) || error.status >= 500) throw error;
      ctx.set(error.headers);
      renderPage(ctx, 'owner-error', { message: error.message }, { status: error.status });
    }
  });

  router.get('/webhooks', signedIn, async (ctx) => {
    const key = await keyOf(ctx);
    if (!key) return notFound(ctx);
    await page(ctx, key.id);
  });

  router.post('/webhooks', ...write, async (ctx) => {
    const key = await keyOf(ctx);
    if (!key) return notFound(ctx);
    try {
      const url = parseWebhookUrl(ownerState(ctx).form!.get('url') ?? '', webhookPolicy);
      const created = await createEndpoint(deps.orm.em.fork(), deps.vault, key.id, url);
      deps.keys.forgetAll(); // cached keys carry their endpoints; other processes hear it from PostgreSQL
      await page(ctx, key.id, { secret: created.secret, created_url: created.endpoint.url });
    } catch (error) {
      if (!(error instanceof KeyRuleError) || error.code === 'not_found') throw error;
      await page(ctx, key.id, { error: error.message }, 400);
    }
  });

  router.post('/webhooks/:id', ...write, async (ctx) => {
    const key = await keyOf(ctx);
    const id = ctx.params.id ?? '';
    if (!key || !/^[0-9a-f-]{36}$/i.test(id)) return notFound(ctx);
    const action = ownerState(ctx).form!.get('action');
    const em = deps.orm.em.fork();
    let done: boolean;
    if (action === 'enable' || action === 'disable') done = await setEndpointEnabled(em, key.id, id, action === 'enable');
    else if (action === 'delete') done = await deleteEndpoint(em, key.id, id);
    else throw errors.invalidFields({ action: ['Must be enable, disable or delete.'] });
    if (!done) return notFound(ctx);
    deps.keys.forgetAll();
    see(ctx, `/owner/keys/${key.id}/webhooks?notice=${action}d`);
  });

  router.post('/webhook-deliveries/:id/resend', ...write, async (ctx) => {
    const key = await keyOf(ctx);
    const id = ctx.params.id ?? '';
    if (!key || !/^[0-9a-f-]{36}$/i.test(id) || !(await markWebhookForResend(deps.orm.em.fork(), key.id, id))) return notFound(ctx);
    await clearFinishedWebhookJob(deps, id);
    await enqueueCommitted(ctx, deps, webhookJob(id, ctx.state.requestId));
    see(ctx, `/owner/keys/${key.id}/webhooks?notice=resent#d-${id}`);
  });

  return router;
}
