// "Send a test post" on the owner console's webhooks page: a sample message, marked as a test, sent
// now to the one webhook or chat channel (src/workers/webhooks/test-post.ts), enabled or not, and the
// page answered with how it went. Nothing is stored or counted. At most TEST_POSTS_PER_HOUR a key,
// counted in Redis, so the console cannot be used to send requests at will; the request waits at
// most WEBHOOK_TIMEOUT_MS for the receiver. The owner API's `POST …/webhooks/:id/test` answers the same as JSON.
import { parseAllowList } from '../../shared/webhooks/address-guard.ts';
import { CHAT_NAMES, isChatKind } from '../../shared/webhooks/chat-channels.ts';
import { findEndpointToPost } from '../../shared/webhooks/webhooks.ts';
import { sendTestPost } from '../../workers/webhooks/test-post.ts';
import type { AppDeps, RouteContext } from '../context.ts';
import { errors } from '../api-errors.ts';
import { notFoundPage } from '../owners/owner-pages.ts';
import { keyOf } from './owner-webhook-actions.ts';
import { renderWebhooksPage, TEST_POSTS_PER_HOUR } from './owner-webhook-page.ts';

const HOUR_MS = 3_600_000;
const ID = /^[0-9a-f-]{36}$/i;

/** A fixed hour from the key's first test post: the count, and the milliseconds left of the hour. */
const COUNT = `
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return { count, redis.call('PTTL', KEYS[1]) }`;

/** This test post counted; the seconds until the next may go when it is over the bound, else undefined. */
async function overTheBound(deps: AppDeps, keyId: string): Promise<number | undefined> {
  const [count, ttlMs] = (await deps.redis.eval(COUNT, 1, `${deps.config.QUEUE_PREFIX}:webhook-test-posts:${keyId}`, HOUR_MS)) as [number, number];
  return count > TEST_POSTS_PER_HOUR ? Math.max(1, Math.ceil(ttlMs / 1000)) : undefined;
}

type TestPostSettings = Parameters<typeof sendTestPost>[2];
type OwnedKey = NonNullable<Awaited<ReturnType<typeof keyOf>>>;
type TestPostResult = { delivered: boolean; detail: string; name: string } | { refused: string; waitSeconds: number };

const settingsOf = (deps: AppDeps): TestPostSettings => ({
  timeoutMs: deps.config.WEBHOOK_TIMEOUT_MS,
  policy: parseAllowList(deps.config.WEBHOOK_ALLOW),
  publicUrl: deps.config.PUBLIC_URL,
  telegramApiUrl: deps.config.TELEGRAM_API_URL,
});

/** The test post to the key's endpoint `id`, or why it may not go now; undefined when the key has no such endpoint. */
async function testPost(ctx: RouteContext, deps: AppDeps, settings: TestPostSettings, key: OwnedKey, id: string): Promise<TestPostResult | undefined> {
  const endpoint = ID.test(id) ? await findEndpointToPost(ctx.state.em, key.id, id) : undefined;
  if (!endpoint) return undefined;
  const waitSeconds = await overTheBound(deps, key.id);
  if (waitSeconds !== undefined) {
    return {
      refused: `A key sends at most ${TEST_POSTS_PER_HOUR} test posts an hour: the next can go in ${Math.ceil(waitSeconds / 60)} minutes.`,
      waitSeconds,
    };
  }
  const target = { kind: endpoint.kind, url: endpoint.url, chatId: endpoint.chat_id, secret: deps.vault.decrypt(endpoint.secret_sealed) };
  const outcome = await sendTestPost(target, key, settings);
  ctx.state.log.info({ keyId: key.id, endpointId: endpoint.id, delivered: outcome.delivered }, 'owner sent a test post');
  const name = isChatKind(endpoint.kind) ? `the ${CHAT_NAMES[endpoint.kind]} channel ${endpoint.url}` : `the webhook ${endpoint.url}`;
  return { ...outcome, name };
}

/** POST /owner/keys/:keyId/webhooks/:id/test: the page, with the outcome. */
export function testPostHandler(deps: AppDeps) {
  const settings = settingsOf(deps);
  return async function testPostPage(ctx: RouteContext) {
    const key = await keyOf(ctx);
    const result = key ? await testPost(ctx, deps, settings, key, ctx.params.id ?? '') : undefined;
    if (!key || !result) return notFoundPage(ctx);
    if ('refused' in result) {
      ctx.set('Retry-After', String(result.waitSeconds));
      return renderWebhooksPage(ctx, deps, key.id, { error: result.refused }, 429);
    }
    if (result.delivered) return renderWebhooksPage(ctx, deps, key.id, { notice: `Test post to ${result.name} delivered: ${result.detail}.` });
    await renderWebhooksPage(ctx, deps, key.id, { error: `Test post to ${result.name} failed: ${result.detail}` });
  };
}

/** POST /owner/api/keys/:keyId/webhooks/:id/test: `{delivered, detail}`. */
export function testPostApiHandler(deps: AppDeps) {
  const settings = settingsOf(deps);
  return async function testPostJson(ctx: RouteContext) {
    const key = await keyOf(ctx);
    const result = key ? await testPost(ctx, deps, settings, key, ctx.params.id ?? '') : undefined;
    if (!key || !result) throw errors.notFound('Not found.');
    if ('refused' in result) throw errors.rateLimited(result.waitSeconds);
    ctx.body = { delivered: result.delivered, detail: result.detail };
  };
}
