// One unit of work per request: the EntityManager every handler and operation of the request
// uses, forked once, when the request first asks for it. A handler forks another only for work that
// outlives the request (a streamed export) or must not share its identity map. A submission whose
// key is cached and whose row joins the group commit needs none, and a fork is a cost paid on every
// request (docs/benchmarks.md#the-whole-pipeline).
import type { Middleware } from 'koa';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { MikroORM } from '../../shared/infra/db/orm.ts';
import type { AppState } from '../context.ts';

export function requestEm(orm: MikroORM): Middleware<AppState> {
  return async (ctx, next) => {
    let em: EntityManager | undefined;
    Object.defineProperty(ctx.state, 'em', { get: () => (em ??= orm.em.fork()), enumerable: true, configurable: true });
    await next();
  };
}
