// /owner/api/keys, /owner/api/confirm — the signed-in address's keys as JSON with its mailbox's
// consent, the mailbox's confirmation, and a key's settings (its added recipients among them)
// changed under the admin API's rules.
import type Router from '@koa/router';
import type { AppDeps, AppState } from '../context.ts';
import { errors } from '../api-errors.ts';
import { keyChangesOf, KeyPatchSchema } from '../keys/key-patch.ts';
import { jsonObjectBody } from '../middleware/json-body.ts';
import { createRouter } from '../router.ts';
import { validate } from '../validate.ts';
import { changeOwnerKey, confirmOwnerMailbox, listOwnerKeys, notFound, ownerConsent } from './operations.ts';
import { apiGuards, optionalJsonBody, ownerEmail } from './session.ts';

export function ownerApiKeyRoutes(deps: AppDeps): Router<AppState> {
  const router = createRouter('/owner/api');
  const { signedIn, write } = apiGuards(deps);

  router.get('/keys', signedIn, async (ctx) => {
    const email = ownerEmail(ctx);
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { email, ...(await ownerConsent(ctx.state.em, deps, email)), keys: await listOwnerKeys(ctx.state.em, deps, email) };
  });

  router.post('/confirm', ...write, optionalJsonBody, async (ctx) => {
    ctx.body = { released: await confirmOwnerMailbox(ctx, deps, ownerEmail(ctx)) };
  });

  router.patch(
    '/keys/:keyId',
    ...write,
    jsonObjectBody(() => errors.unsupportedMediaType(['application/json'])),
    async (ctx) => {
      const patch = validate(KeyPatchSchema, ctx.request.body);
      const key = await changeOwnerKey(ctx, deps, ownerEmail(ctx), ctx.params.keyId ?? '', {
        ...keyChangesOf(patch),
        domains: patch.domains,
        recipients: patch.recipients,
      });
      if (!key) throw notFound();
      ctx.body = key;
    },
  );

  return router;
}
