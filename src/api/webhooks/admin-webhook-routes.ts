// The operator API for a key's webhooks: endpoints (list, add, enable or disable, delete) and the
// delivery log with re-send. Behind the admin token like the rest of /admin.
import { clearFinishedJob } from '../owners/access.ts';
import type Router from '@koa/router';
import * as v from 'valibot';
import { parseAllowList } from '../../shared/webhooks/address-guard.ts';
import { webhookJob } from '../../shared/submissions/delivery-jobs.ts';
import {
  createEndpoint,
  keyIdByValue,
  markWebhookForResend,
  parseWebhookUrl,
  deleteEndpoint,
  listEndpoints,
  setEndpointEnabled,
  listWebhookDeliveries,
} from '../../shared/webhooks/webhooks.ts';
import type { AppDeps, AppState } from '../context.ts';
import { enqueueCommitted } from '../submissions/enqueue.ts';
import { errors } from '../errors.ts';
import { jsonObjectBody } from '../middleware/json-body.ts';
import { createRouter } from '../router.ts';
import { validate } from '../validate.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const NewWebhookSchema = v.strictObject({ url: v.string('Give the URL.') }, 'Only url can be given.');
export const WebhookPatchSchema = v.strictObject({ enabled: v.boolean('Must be true or false.') }, 'Only enabled can be changed.');
export const DeliveryQuerySchema = v.object({
  submission: v.optional(v.pipe(v.string('Give one submission id.'), v.regex(UUID, 'Not a submission id.'))),
  limit: v.optional(v.pipe(v.string(), v.regex(/^\d+$/, 'Must be a whole number.'), v.transform(Number), v.minValue(1), v.maxValue(200, 'At most 200.')), '50'),
});

export function adminWebhookRoutes(deps: AppDeps): Router<AppState> {
  const router = createRouter('/admin/keys/:key');
  const json = jsonObjectBody(() => errors.unsupportedMediaType(['application/json']));
  const webhookPolicy = parseAllowList(deps.config.WEBHOOK_ALLOW);
  const keyId = (key: string | undefined) => keyIdByValue(deps.orm.em.fork(), deps.vault, key ?? '');
  const endpointId = (id: string | undefined) => {
    if (!id || !UUID.test(id)) throw errors.notFound('Unknown webhook.');
    return id;
  };

  router.get('/webhooks', async (ctx) => {
    ctx.body = { webhooks: await listEndpoints(deps.orm.em.fork(), await keyId(ctx.params.key)) };
  });

  router.post('/webhooks', json, async (ctx) => {
    const { url } = validate(NewWebhookSchema, ctx.request.body);
    const id = await keyId(ctx.params.key);
    const created = await createEndpoint(deps.orm.em.fork(), deps.vault, id, parseWebhookUrl(url, webhookPolicy));
    deps.keys.forgetAll(); // cached keys carry their endpoints; other processes hear it from PostgreSQL
    ctx.status = 201;
    // The secret is shown this once; it is kept sealed, for signing.
    ctx.body = { webhook: created.endpoint, secret: created.secret };
  });

  router.patch('/webhooks/:id', json, async (ctx) => {
    const { enabled } = validate(WebhookPatchSchema, ctx.request.body);
    const id = await keyId(ctx.params.key);
    const em = deps.orm.em.fork();
    if (!(await setEndpointEnabled(em, id, endpointId(ctx.params.id), enabled))) throw errors.notFound('Unknown webhook.');
    deps.keys.forgetAll();
    ctx.body = { webhook: (await listEndpoints(em, id)).find((endpoint) => endpoint.id === ctx.params.id) };
  });

  router.delete('/webhooks/:id', async (ctx) => {
    const id = await keyId(ctx.params.key);
    if (!(await deleteEndpoint(deps.orm.em.fork(), id, endpointId(ctx.params.id)))) throw errors.notFound('Unknown webhook.');
    deps.keys.forgetAll();
    ctx.status = 204;
  });

  router.get('/webhook-deliveries', async (ctx) => {
    const query = validate(DeliveryQuerySchema, { ...ctx.query });
    const id = await keyId(ctx.params.key);
    ctx.body = { deliveries: await listWebhookDeliveries(deps.orm.em.fork(), { keyId: id, submissionId: query.submission, limit: query.limit }) };
  });

  router.post('/webhook-deliveries/:id/resend', async (ctx) => {
    const id = await keyId(ctx.params.key);
    const deliveryId = ctx.params.id ?? '';
    if (!UUID.test(deliveryId) || !(await markWebhookForResend(deps.orm.em.fork(), id, deliveryId))) {
      throw errors.notFound('No failed delivery of this key with that id.');
    }
    await clearFinishedWebhookJob(deps, deliveryId);
    await enqueueCommitted(ctx, deps, webhookJob(deliveryId, ctx.state.requestId));
    ctx.status = 202;
    ctx.body = { success: true, delivery_id: deliveryId, status: 'queued' };
  });

  return router;
}

/** A finished job under the row's id would make the new add a no-op (see clearFinishedJob). A Redis outage leaves it to the reconciler. */
export async function clearFinishedWebhookJob(deps: Pick<AppDeps, 'webhookQueue'>, deliveryId: string): Promise<void> {
  await clearFinishedJob(deps.webhookQueue, deliveryId).catch(() => undefined);
}
