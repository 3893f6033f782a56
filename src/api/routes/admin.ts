// The operator API under /admin (bearer token): key listing and key changes.
import Router from '@koa/router';
import * as v from 'valibot';
import { KEY_STATUSES } from '../../shared/db/entities.ts';
import { keyRecord, KeyRuleError, listKeys, parseDomains, updateKey } from '../../shared/keys.ts';
import type { AppDeps, AppState } from '../context.ts';
import { errors, fromKeyRule } from '../errors.ts';
import { adminAuth } from '../middleware/admin-auth.ts';
import { jsonObjectBody } from '../middleware/json-body.ts';
import { validate } from '../validate.ts';

export const KeyPatchSchema = v.strictObject(
  {
    status: v.optional(v.picklist(KEY_STATUSES, `Must be one of ${KEY_STATUSES.join(', ')}.`)),
    use_domain: v.optional(v.boolean('Must be true or false.')),
    domains: v.optional(v.array(v.unknown(), 'Must be a list of host names.')),
  },
  'Only status, use_domain and domains can be changed.',
);

const KeyListQuerySchema = v.object({
  email: v.pipe(v.string('Give ?email=<address>.'), v.trim(), v.email('Enter a valid email address.')),
});

export function adminRoutes(deps: AppDeps): Router<AppState> {
  const router = new Router<AppState>({ prefix: '/admin' });
  router.use(adminAuth(deps.config.ADMIN_TOKEN));

  router.get('/keys', async (ctx) => {
    const { email } = validate(KeyListQuerySchema, { email: ctx.query.email });
    const keys = await listKeys(deps.orm.em.fork(), email);
    ctx.body = { email: email.toLowerCase(), keys: keys.map(keyRecord) };
  });

  router.patch('/keys/:key', jsonObjectBody(() => errors.unsupportedMediaType(['application/json'])), async (ctx) => {
    const patch = validate(KeyPatchSchema, ctx.request.body);
    try {
      const key = await updateKey(deps.orm.em.fork(), ctx.params.key ?? '', {
        status: patch.status,
        useDomain: patch.use_domain,
        domains: patch.domains === undefined ? undefined : parseDomains(patch.domains),
      });
      ctx.body = keyRecord(key);
    } catch (error) {
      throw error instanceof KeyRuleError ? fromKeyRule(error) : error;
    }
  });

  return router;
}
