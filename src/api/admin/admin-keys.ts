// The operator's keys: found by their owner's address, and changed (their settings and added
// recipients), each answered as a key record with its added recipients.
import * as v from 'valibot';
import type { EntityManager } from '@mikro-orm/postgresql';
import { AdminKeyPatchSchema, keyChangesOf } from '../keys/key-patch.ts';
import { keyRecord, listKeys, parseDomains } from '../../shared/keys/keys.ts';
import type { VerificationKey } from '../../shared/keys/entities.ts';
import { recipientsOfKeys } from '../../shared/recipients/recipients.ts';
import { changeKey } from '../keys/key-changes.ts';
import type { AppDeps, RouteContext } from '../context.ts';
import { validate } from '../validate.ts';

const KeyListQuerySchema = v.object({
  email: v.pipe(v.string('Give ?email=<address>.'), v.trim(), v.email('Enter a valid email address.')),
});

/** GET /admin/keys?email=: every key of an address. */
export async function listKeysOfAddress(ctx: RouteContext, deps: AppDeps): Promise<void> {
  const { email } = validate(KeyListQuerySchema, { email: ctx.query.email });
  const keys = await listKeys(ctx.state.em, email);
  ctx.body = { email: email.toLowerCase(), keys: await keyRecords(ctx.state.em, deps, keys) };
}

/** PATCH /admin/keys/:key: the key's settings and recipients changed. */
export async function patchKey(ctx: RouteContext, deps: AppDeps): Promise<void> {
  const patch = validate(AdminKeyPatchSchema, ctx.request.body);
  const key = await changeKey(
    ctx,
    deps,
    deps.vault.hash(ctx.params.key ?? ''),
    { ...keyChangesOf(patch), domains: patch.domains === undefined ? undefined : parseDomains(patch.domains) },
    patch.recipients,
  );
  const [record] = await keyRecords(ctx.state.em, deps, [key]);
  ctx.body = record;
}

/** The operator's key records, each with its added recipients. */
async function keyRecords(em: EntityManager, deps: AppDeps, keys: VerificationKey[]) {
  const recipients = await recipientsOfKeys(
    em,
    keys.map((key) => key.id),
  );
  return keys.map((key) => ({ ...keyRecord(key, deps.vault), recipients: recipients.get(key.id) ?? [] }));
}
