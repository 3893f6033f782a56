// The operator API under /admin: keys (with their added recipients), and submissions with their
// delivery status (and each added recipient's copy). The token is
// checked by the app-level admin guard (middleware/admin-auth.ts), whatever the path's spelling.
import type Router from '@koa/router';
import { createRouter } from '../router.ts';
import type { AppDeps, AppState } from '../context.ts';
import { errors } from '../api-errors.ts';
import { jsonObjectBody, optionalJsonObjectBody } from '../middleware/json-body.ts';
import { listKeysOfAddress, patchKey } from './admin-keys.ts';
import {
  exportSubmissions,
  flushDeliveries,
  listSubmissionPage,
  listSubmissionWebhookDeliveries,
  resendSubmissionCopy,
  resendSubmissionEmail,
  showSubmission,
} from './admin-submissions.ts';

export function adminRoutes(deps: AppDeps): Router<AppState> {
  const router = createRouter('/admin');
  const json = jsonObjectBody(() => errors.unsupportedMediaType(['application/json']));
  const optionalJson = optionalJsonObjectBody(() => errors.unsupportedMediaType(['application/json']));

  router.get('/keys', (ctx) => listKeysOfAddress(ctx, deps));
  router.get('/submissions.csv', (ctx) => exportSubmissions(ctx, deps));
  router.get('/submissions/:id', (ctx) => showSubmission(ctx, deps));
  router.get('/submissions/:id/webhook-deliveries', (ctx) => listSubmissionWebhookDeliveries(ctx));
  router.post('/deliveries/flush', optionalJson, (ctx) => flushDeliveries(ctx, deps));
  router.post('/submissions/:id/resend', (ctx) => resendSubmissionEmail(ctx, deps));
  router.post('/submissions/:id/copies/:copyId/resend', (ctx) => resendSubmissionCopy(ctx, deps));
  router.get('/submissions', (ctx) => listSubmissionPage(ctx, deps));
  router.patch('/keys/:key', json, (ctx) => patchKey(ctx, deps));

  return router;
}
