// One unit of work per request: the EntityManager every handler and operation of the request
// uses, forked once here. A handler forks another only for work that outlives the request (a
// streamed export) or must not share its identity map.
import type { Middleware } from 'koa';
import type { MikroORM } from '../../shared/infra/db/orm.ts';
import type { AppState } from '../context.ts';

export function requestEm(orm: MikroORM): Middleware<AppState> {
  return async (ctx, next) => {
    ctx.state.em = orm.em.fork();
    await next();
  };
}
