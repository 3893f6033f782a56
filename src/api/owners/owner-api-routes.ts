// /owner/api — the owner console's operations as JSON, with the same session cookie as the pages.
// Writes carry the session's CSRF token in X-CSRF-Token (GET /owner/api/session gives it) and are
// refused when a browser says they come from another site. A key's webhooks are here
// too, as on the pages (src/api/webhooks/owner-webhook-routes.ts) and in the admin API.
import type Router from '@koa/router';
import type { Middleware } from 'koa';
import * as v from 'valibot';
import { parseAllowList } from '../../shared/webhooks/address-guard.ts';
import { consumeSignIn, endSession } from '../../shared/owners/owners.ts';
import { webhookJob } from '../../shared/submissions/delivery-jobs.ts';
import {
  createEndpoint,
  markWebhookForResend,
  parseWebhookUrl,
  deleteEndpoint,
  listEndpoints,
  setEndpointEnabled,
  listWebhookDeliveries,
} from '../../shared/webhooks/webhooks.ts';
import type { AppContext, AppDeps, AppState, RouteContext } from '../context.ts';
import { enqueueCommitted } from '../submissions/enqueue.ts';
import { errors } from '../errors.ts';
import { jsonObjectBody } from '../middleware/json-body.ts';
import { ownedKey } from './access.ts';
import { ListFilterSchema } from './filters.ts';
import { markSubmission } from './spam-marks.ts';
import { SPAM_MARKS } from '../../shared/infra/db/entities.ts';
import {
  changeOwnerKey,
  confirmOwnerMailbox,
  deleteOwnerSubmission,
  getOwnerSubmission,
  listOwnerKeys,
  MAX_PAGE_SIZE,
  notFound,
  ownerConsent,
  ownerSubmissionsPage,
  PAGE_SIZE,
  resendOwnerSubmission,
  sendOwnerCsv,
  sendOwnerFile,
} from './operations.ts';
import { clearedSessionCookie, createCsrf, crossSiteGuard, csrfGuard, optionalJsonBody, ownerState, requireOwner, sessionCookie } from './session.ts';
import { createRouter } from '../router.ts';
import { validate } from '../validate.ts';
import { KeyPatchSchema } from '../../shared/keys/key-patch.ts';
import { clearFinishedWebhookJob, DeliveryQuerySchema, NewWebhookSchema, WebhookPatchSchema } from '../webhooks/admin-webhook-routes.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const SessionRequestSchema = v.object({
  token: v.pipe(v.string('Must be a string.'), v.nonEmpty('Give the token of the sign-in link.'), v.description('The token of the emailed sign-in link')),
});

const ListQuerySchema = v.object({
  limit: v.optional(
    v.pipe(v.string(), v.regex(/^\d+$/, 'Must be a whole number.'), v.transform(Number), v.minValue(1), v.maxValue(MAX_PAGE_SIZE, `At most ${MAX_PAGE_SIZE}.`)),
    String(PAGE_SIZE),
  ),
  cursor: v.optional(v.string('Give one cursor.')),
});

export const SpamMarkSchema = v.strictObject(
  { mark: v.pipe(v.picklist(SPAM_MARKS, 'Must be spam or ham.'), v.description('ham: not spam (a held message is sent); spam: spam')) },
  'Only mark can be given.',
);

const ListQueryWithViewSchema = v.object({
  ...ListQuerySchema.entries,
  view: v.optional(v.pipe(v.picklist(['all', 'spam'], 'Must be all or spam.'), v.description('spam: only the messages held as spam (the Spam view)')), 'all'),
});

export function ownerApiRoutes(deps: AppDeps, signInLimiter: Middleware<AppState>): Router<AppState> {
  const router = createRouter('/owner/api');
  const secure = deps.config.PUBLIC_URL.startsWith('https:');
  const csrf = createCsrf(deps.config.SECRET);
  const sameSite = crossSiteGuard(deps.config.PUBLIC_URL);
  const signedIn = requireOwner(deps, 'api');
  const webhookPolicy = parseAllowList(deps.config.WEBHOOK_ALLOW);
  const write = [sameSite, signedIn, csrfGuard(deps.config.SECRET)];
  const email = (ctx: AppContext) => ownerState(ctx).owner!.email;
  const json = jsonObjectBody(() => errors.unsupportedMediaType(['application/json']));
  /** The session's key named in the path, or 404 (another owner's key is answered as unknown). */
  const ownKeyId = async (ctx: RouteContext) => {
    const key = await ownedKey(deps.orm.em.fork(), email(ctx), ctx.params.keyId ?? '');
    if (!key) throw notFound();
    return key.id;
  };
  /** A well-formed id from the path; anything else cannot be one of the key's rows. */
  const rowId = (ctx: RouteContext) => {
    const id = ctx.params.id ?? '';
    if (!UUID.test(id)) throw notFound();
    return id;
  };
  const sessionBody = (ctx: AppContext) => {
    const state = ownerState(ctx);
    return { email: state.owner!.email, expires_at: state.owner!.expiresAt.toISOString(), csrf_token: state.csrf! };
  };

  // The JSON twin of the link page's button: uses the link's token and opens a session.
  router.post(
    '/session',
    sameSite,
    signInLimiter,
    jsonObjectBody(() => errors.unsupportedMediaType(['application/json'])),
    async (ctx) => {
      const { token } = validate(SessionRequestSchema, ctx.request.body);
      const signedIn = await consumeSignIn(deps.orm.em.fork(), token);
      if (!signedIn) {
        const message = 'This sign-in link is not valid: used, expired or not one of this service.';
        throw errors.invalidFields({ token: [message] }, message);
      }
      ctx.set('Set-Cookie', sessionCookie(signedIn.cookie, secure));
      ctx.body = { email: signedIn.session.email, expires_at: signedIn.session.expiresAt.toISOString(), csrf_token: csrf.token(signedIn.session) };
    },
  );

  router.get('/session', signedIn, (ctx) => {
    ctx.set('Cache-Control', 'no-store');
    ctx.body = sessionBody(ctx);
  });

  router.delete('/session', ...write, async (ctx) => {
    await endSession(deps.orm.em.fork(), ownerState(ctx).owner!.id);
    ctx.set('Set-Cookie', clearedSessionCookie(secure));
    ctx.status = 204;
  });

  router.get('/keys', signedIn, async (ctx) => {
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { email: email(ctx), ...(await ownerConsent(deps, email(ctx))), keys: await listOwnerKeys(deps, email(ctx)) };
  });

  router.post('/confirm', ...write, optionalJsonBody, async (ctx) => {
    ctx.body = { released: await confirmOwnerMailbox(ctx, deps, email(ctx)) };
  });

  router.patch(
    '/keys/:keyId',
    ...write,
    jsonObjectBody(() => errors.unsupportedMediaType(['application/json'])),
    async (ctx) => {
      const patch = validate(KeyPatchSchema, ctx.request.body);
      const key = await changeOwnerKey(deps, email(ctx), ctx.params.keyId ?? '', {
        status: patch.status,
        useDomain: patch.use_domain,
        domains: patch.domains,
        captcha: patch.captcha,
        spamFilter: patch.spam_filter,
        spamToWebhooks: patch.spam_to_webhooks,
        label: patch.label,
        subjectPrefix: patch.subject_prefix,
      });
      if (!key) throw notFound();
      ctx.body = key;
    },
  );

  router.get('/keys/:keyId/submissions', signedIn, async (ctx) => {
    const { view, ...query } = validate(ListQueryWithViewSchema, { ...ctx.query });
    const filters = validate(ListFilterSchema, { ...ctx.query });
    const page = await ownerSubmissionsPage(deps, email(ctx), ctx.params.keyId ?? '', {
      ...query,
      filters,
      sessionId: ownerState(ctx).owner!.id,
      ...(view === 'spam' ? { status: 'spam' as const } : {}),
    });
    if (!page) throw notFound();
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { submissions: page.submissions, next_cursor: page.next_cursor };
  });

  router.get('/keys/:keyId/submissions.csv', signedIn, async (ctx) => {
    const filters = validate(ListFilterSchema, { ...ctx.query });
    if (!(await sendOwnerCsv(ctx, deps, ownerState(ctx).owner!, ctx.params.keyId ?? '', filters))) throw notFound();
  });

  router.get('/submissions/:id', signedIn, async (ctx) => {
    const record = await getOwnerSubmission(deps, email(ctx), ctx.params.id ?? '');
    if (!record) throw notFound();
    ctx.set('Cache-Control', 'no-store');
    ctx.body = record;
  });

  router.get('/submissions/:id/files/:fileId', signedIn, async (ctx) => {
    if (!(await sendOwnerFile(ctx, deps, email(ctx), ctx.params.id ?? '', ctx.params.fileId ?? ''))) throw notFound();
  });

  router.post('/submissions/:id/resend', ...write, optionalJsonBody, async (ctx) => {
    const record = await resendOwnerSubmission(ctx, deps, email(ctx), ctx.params.id ?? '');
    if (!record) throw notFound();
    ctx.body = record;
  });

  router.post('/submissions/:id/spam-mark', ...write, json, async (ctx) => {
    const { mark } = validate(SpamMarkSchema, ctx.request.body);
    const result = await markSubmission(ctx, deps, email(ctx), ctx.params.id ?? '', mark);
    if (!result) throw notFound();
    ctx.body = { teaching: result.teaching, released: result.released, submission: await getOwnerSubmission(deps, email(ctx), result.submission.id) };
  });

  router.delete('/submissions/:id', ...write, async (ctx) => {
    if (!(await deleteOwnerSubmission(deps, email(ctx), ctx.params.id ?? ''))) throw notFound();
    ctx.status = 204;
  });

  router.get('/keys/:keyId/webhooks', signedIn, async (ctx) => {
    const keyId = await ownKeyId(ctx);
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { webhooks: await listEndpoints(deps.orm.em.fork(), keyId) };
  });

  router.post('/keys/:keyId/webhooks', ...write, json, async (ctx) => {
    const keyId = await ownKeyId(ctx);
    const { url } = validate(NewWebhookSchema, ctx.request.body);
    const created = await createEndpoint(deps.orm.em.fork(), deps.vault, keyId, parseWebhookUrl(url, webhookPolicy));
    deps.keys.forgetAll(); // cached keys carry their endpoints; other processes hear it from PostgreSQL
    ctx.set('Cache-Control', 'no-store');
    ctx.status = 201;
    // The secret is shown this once; it is kept sealed, for signing.
    ctx.body = { webhook: created.endpoint, secret: created.secret };
  });

  router.patch('/keys/:keyId/webhooks/:id', ...write, json, async (ctx) => {
    const keyId = await ownKeyId(ctx);
    const { enabled } = validate(WebhookPatchSchema, ctx.request.body);
    const em = deps.orm.em.fork();
    if (!(await setEndpointEnabled(em, keyId, rowId(ctx), enabled))) throw notFound();
    deps.keys.forgetAll();
    ctx.body = { webhook: (await listEndpoints(em, keyId)).find((endpoint) => endpoint.id === ctx.params.id) };
  });

  router.delete('/keys/:keyId/webhooks/:id', ...write, async (ctx) => {
    const keyId = await ownKeyId(ctx);
    if (!(await deleteEndpoint(deps.orm.em.fork(), keyId, rowId(ctx)))) throw notFound();
    deps.keys.forgetAll();
    ctx.status = 204;
  });

  router.get('/keys/:keyId/webhook-deliveries', signedIn, async (ctx) => {
    const keyId = await ownKeyId(ctx);
    const query = validate(DeliveryQuerySchema, { ...ctx.query });
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { deliveries: await listWebhookDeliveries(deps.orm.em.fork(), { keyId, submissionId: query.submission, limit: query.limit }) };
  });

  router.post('/keys/:keyId/webhook-deliveries/:id/resend', ...write, optionalJsonBody, async (ctx) => {
    const keyId = await ownKeyId(ctx);
    const deliveryId = rowId(ctx);
    if (!(await markWebhookForResend(deps.orm.em.fork(), keyId, deliveryId))) throw notFound();
    await clearFinishedWebhookJob(deps, deliveryId);
    await enqueueCommitted(ctx, deps, webhookJob(deliveryId, ctx.state.requestId));
    ctx.status = 202;
    ctx.body = { success: true, delivery_id: deliveryId, status: 'queued' };
  });

  return router;
}
