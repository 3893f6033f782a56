// POST / — verification keys: generateKey creates a key and emails it; getKeys emails every
// active key of the address. What happens, in order: rate limit → parse → validate → store → enqueue → respond.
import type Router from '@koa/router';
import { createRouter } from '../router.ts';
import type { Middleware } from 'koa';
import * as v from 'valibot';
import { generateKey, parseDomains, requestAllKeysEmail } from '../../shared/keys/keys.ts';
import { keyEmailJob } from '../../shared/deliveries/delivery-jobs.ts';
import { enqueueCommitted } from '../submissions/enqueue.ts';
import type { AppDeps, AppState } from '../context.ts';
import { errors } from '../api-errors.ts';
import { formCors, preflight } from '../middleware/form-cors.ts';
import { jsonObjectBody } from '../middleware/json-body.ts';
import { validate } from '../validate.ts';

export const KeyRequestSchema = v.object({
  email: v.pipe(
    v.string('Must be a string.'),
    v.trim(),
    v.maxLength(254, 'Must be at most 254 characters.'),
    v.email('Enter a valid email address.'),
    v.description('Address to which the key or keys are sent'),
  ),
  requestType: v.optional(
    v.pipe(
      v.picklist(['generateKey', 'getKeys'], 'Must be generateKey or getKeys.'),
      v.description('generateKey (default) creates a key; getKeys emails all active keys'),
    ),
    'generateKey',
  ),
  domains: v.optional(
    v.pipe(
      v.array(v.unknown(), 'Must be a list of host names.'),
      v.description('generateKey only: restrict the new key to these host names (and their subdomains)'),
    ),
  ),
});

export function keyRoutes(deps: AppDeps, limiter: Middleware<AppState>): Router<AppState> {
  const router = createRouter();

  router.options('/', formCors, preflight);

  router.post(
    '/',
    formCors,
    limiter,
    jsonObjectBody(() => errors.invalidFields({ __all__: ['Send a JSON body with Content-Type: application/json.'] }, 'Unsupported content type.')),
    async (ctx) => {
      const body = ctx.request.body as Record<string, unknown>;
      if (body.email === undefined || body.email === null || body.email === '') throw errors.missingFields(['email']);
      const request = validate(KeyRequestSchema, body);
      const em = ctx.state.em;

      if (request.requestType === 'generateKey') {
        const domains = parseDomains(request.domains ?? []);
        const { key, keyValue, activeKeys, keyEmail } = await generateKey(em, deps.vault, {
          email: request.email,
          domains,
          emailsPerHour: deps.config.KEY_EMAILS_PER_HOUR,
        });
        await enqueueCommitted(ctx, deps, keyEmailJob(keyEmail.id, ctx.state.requestId));
        ctx.body = {
          success: true,
          message: `New key generated and sent to ${key.email}.`,
          key: keyValue,
          keys_count: activeKeys,
        };
        return;
      }

      if (request.domains !== undefined) throw errors.invalidFields({ domains: ['Only with requestType generateKey.'] });
      const { activeKeys, keyEmail } = await requestAllKeysEmail(em, {
        email: request.email,
        emailsPerHour: deps.config.KEY_EMAILS_PER_HOUR,
      });
      if (keyEmail) await enqueueCommitted(ctx, deps, keyEmailJob(keyEmail.id, ctx.state.requestId));
      const email = request.email.toLowerCase();
      ctx.body = {
        success: true,
        message: keyEmail ? `All keys have been emailed to ${email}.` : `No active keys for ${email}; nothing was emailed.`,
        keys_count: activeKeys,
      };
    },
  );

  return router;
}
