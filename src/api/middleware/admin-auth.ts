// Guards /admin: `Authorization: Bearer <ADMIN_TOKEN>` (or Basic with the token as password, for
// browsers on the queue dashboard), compared in constant time. Without ADMIN_TOKEN /admin is a 404.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Middleware } from 'koa';
import type { AppState } from '../context.ts';
import { errors } from '../errors.ts';
import { adminCsrf } from './admin-csrf.ts';

const digest = (value: string) => createHash('sha256').update(value).digest();

function presentedToken(header: string): string | undefined {
  const [scheme, value] = header.trim().split(/\s+/, 2);
  if (!value) return undefined;
  if (scheme?.toLowerCase() === 'bearer') return value;
  if (scheme?.toLowerCase() === 'basic') {
    const decoded = Buffer.from(value, 'base64').toString('utf8');
    return decoded.includes(':') ? decoded.slice(decoded.indexOf(':') + 1) : undefined;
  }
  return undefined;
}

export function adminAuth(adminToken: string | undefined): Middleware<AppState> {
  const expected = adminToken ? digest(adminToken) : undefined;
  const csrf = adminCsrf();
  return async (ctx, next) => {
    if (!expected) throw errors.notFound();
    const given = presentedToken(ctx.get('Authorization'));
    // Comparing fixed-length digests keeps the time independent of where the strings differ.
    if (given === undefined || !timingSafeEqual(digest(given), expected)) throw errors.unauthorized();
    // Basic credentials are cached by browsers: a valid token alone does not prove intent.
    await csrf(ctx, next);
  };
}
