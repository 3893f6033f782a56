// The queue dashboard (bull-board) at /admin/queues, behind the admin token: jobs, retries,
// failures, and retrying a failed job. Browsers send the token through Basic auth (any user name,
// the token as password), since the dashboard's own requests cannot carry a Bearer header.
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { KoaAdapter } from '@bull-board/koa';
import compose from 'koa-compose';
import type { Middleware } from 'koa';
import type { AppDeps, AppState } from './context.ts';
import { adminAuth } from './middleware/admin-auth.ts';

export const QUEUE_BOARD_PATH = '/admin/queues';

export function queueBoard(deps: AppDeps): Middleware<AppState> {
  const adapter = new KoaAdapter();
  adapter.setBasePath(QUEUE_BOARD_PATH);
  createBullBoard({ queues: [new BullMQAdapter(deps.queue)], serverAdapter: adapter });
  const guarded = compose([adminAuth(deps.config.ADMIN_TOKEN), adapter.registerPlugin() as Middleware<AppState>]);
  return (ctx, next) =>
    ctx.path === QUEUE_BOARD_PATH || ctx.path.startsWith(`${QUEUE_BOARD_PATH}/`) ? guarded(ctx, next) : next();
}
