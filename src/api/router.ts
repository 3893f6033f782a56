// Every router of the API matches paths the same way: case-sensitively, with an optional trailing
// slash. One spelling of a path reaches a route; other spellings are 404s.
import Router from '@koa/router';
import type { AppState } from './context.ts';

export function createRouter(prefix?: string): Router<AppState> {
  return new Router<AppState>({ prefix, sensitive: true, strict: false });
}

/** The routes the routers registered, for the API description. */
export const registeredRoutes = (routers: Array<Router<AppState>>) =>
  routers.flatMap((router) => router.stack.map((layer) => ({ methods: layer.methods, path: String(layer.path) })));
