// Guards /admin: `Authorization: Bearer <ADMIN_TOKEN>`, compared in constant time.
// Without ADMIN_TOKEN the operator API does not exist (404).
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Middleware } from 'koa';
import type { AppState } from '../context.ts';
import { errors } from '../errors.ts';

const digest = (value: string) => createHash('sha256').update(value).digest();

export function adminAuth(adminToken: string | undefined): Middleware<AppState> {
  const expected = adminToken ? digest(adminToken) : undefined;
  return async (ctx, next) => {
    if (!expected) throw errors.notFound();
    const match = /^Bearer\s+(.+)$/i.exec(ctx.get('Authorization'));
    // Comparing fixed-length digests keeps the time independent of where the strings differ.
    if (!match?.[1] || !timingSafeEqual(digest(match[1].trim()), expected)) throw errors.unauthorized();
    await next();
  };
}
