// Guards the operator surface: every request whose path, however it is spelled, names /admin
// needs `Authorization: Bearer <ADMIN_TOKEN>` (or Basic with the token as password, for browsers
// on the queue dashboard), compared in constant time. Without ADMIN_TOKEN it is a 404.
//
// The guard runs once, at the app level, before any router: routers and adapters each have their
// own idea of case, encoding and slashes, so authentication must not depend on which one matches.
import { posix } from 'node:path';
import type { Middleware } from 'koa';
import type { AppState } from '../context.ts';
import { tokenCheck } from '../../shared/infra/bearer-token.ts';
import { errors } from '../api-errors.ts';
import { adminCsrf } from './admin-csrf.ts';

/** Percent-decodes until nothing changes (at most a few passes); a malformed escape stops it. */
export function decoded(path: string): string {
  let current = path;
  for (let pass = 0; pass < 4; pass++) {
    let next: string;
    try {
      next = decodeURIComponent(current);
    } catch {
      return current;
    }
    if (next === current) return current;
    current = next;
  }
  return current;
}

/**
 * Whether a request path names the admin surface in any spelling: decoded, lower-cased, with
 * backslashes, doubled slashes and dot segments resolved, and its first segment starting with
 * "admin" (so `/admin;x` and `/administrator` are covered too; nothing public lives there).
 */
export function isAdminPath(path: string): boolean {
  const canonical = posix.normalize(`/${decoded(path).toLowerCase().replace(/\\/g, '/')}`);
  const first = canonical.split('/').find((segment) => segment.length > 0) ?? '';
  return first.startsWith('admin');
}

/** The token check alone: 404 without ADMIN_TOKEN, 401 for a missing or wrong token. */
export function requireAdminToken(adminToken: string | undefined): Middleware<AppState> {
  const carriesToken = adminToken ? tokenCheck(adminToken) : undefined;
  return async (ctx, next) => {
    if (!carriesToken) throw errors.notFound();
    if (!carriesToken(ctx.get('Authorization'))) throw errors.unauthorized();
    await next();
  };
}

/** The admin surface, whatever the spelling of its path: the token, then the cross-site check. */
export function adminGuard(adminToken: string | undefined): Middleware<AppState> {
  const token = requireAdminToken(adminToken);
  // Basic credentials are cached by browsers: a valid token alone does not prove intent.
  const csrf = adminCsrf();
  return async (ctx, next) => {
    if (!isAdminPath(ctx.path)) {
      await next();
      return;
    }
    await token(ctx, async () => {
      await csrf(ctx, next);
    });
  };
}
