// The queue dashboard (bull-board) at /admin/queues, behind the admin token (checked by the
// app-level guard in middleware/admin-auth.ts): jobs, retries, failures, and retrying a failed job. Browsers send the token through Basic auth (any user name,
// the token as password), since the dashboard's own requests cannot carry a Bearer header.
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { KoaAdapter } from '@bull-board/koa';
import type { Middleware } from 'koa';
import type { AppDeps, AppState } from '../context.ts';

export const QUEUE_BOARD_PATH = '/admin/queues';

export function queueBoard(deps: AppDeps): Middleware<AppState> {
  const adapter = new KoaAdapter();
  adapter.setBasePath(QUEUE_BOARD_PATH);
  createBullBoard({ queues: [new BullMQAdapter(deps.queue), new BullMQAdapter(deps.webhookQueue)], serverAdapter: adapter });
  const board = adapter.registerPlugin() as Middleware<AppState>;
  return async (ctx, next) => {
    if (ctx.path === QUEUE_BOARD_PATH || ctx.path.startsWith(`${QUEUE_BOARD_PATH}/`)) await board(ctx, next);
    else await next();
  };
}
