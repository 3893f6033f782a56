// ALTCHA on a plain HTML form: one script tag and one element.
//   <script async defer src="https://forms.example/assets/altcha.min.js"></script>
//   <altcha-widget challenge="https://forms.example/api/contact-api/altcha-challenge?access_key=KEY"></altcha-widget>
// The widget fetches a challenge here, solves it in the browser and puts its answer in the form's
// `altcha` field; the submission endpoint checks it (captcha.ts, altcha.ts).
import type Router from '@koa/router';
import type { AppDeps, AppState } from '../context.ts';
import { errors } from '../api-errors.ts';
import { challengeCors, challengePreflight } from '../middleware/form-cors.ts';
import type { RateLimiter } from '../middleware/rate-limit.ts';
import { createRouter } from '../router.ts';
import { loadAsset, sendAsset } from '../view.ts';
import type { Altcha } from './altcha.ts';
import { SUBMISSION_PATH } from './submission-routes.ts';

export const ALTCHA_SCRIPT_PATH = '/assets/altcha.min.js';
/** The widget without its styles and workers, for this service's own pages: their CSP refuses inline styles and blob: workers. */
export const ALTCHA_EXTERNAL_SCRIPT_PATH = '/assets/altcha-external.min.js';
export const ALTCHA_CSS_PATH = '/assets/altcha.css';
export const ALTCHA_WORKER_PATH = '/assets/altcha-pbkdf2-worker.js';
export const ALTCHA_CHALLENGE_PATH = `${SUBMISSION_PATH}altcha-challenge`;

/** A week: the file changes only with the `altcha` package, and the ETag catches that after. */
const SCRIPT_MAX_AGE_SECONDS = 7 * 24 * 3600;

// The widget's self-contained build (its styles and workers inside), as the package ships it.
const script = loadAsset(
  ALTCHA_SCRIPT_PATH,
  new URL('./altcha.min.js', import.meta.resolve('altcha')),
  'application/javascript; charset=utf-8',
  SCRIPT_MAX_AGE_SECONDS,
);
const ownPageAssets = [
  loadAsset(
    ALTCHA_EXTERNAL_SCRIPT_PATH,
    new URL('../external/altcha.min.js', import.meta.resolve('altcha')),
    'application/javascript; charset=utf-8',
    SCRIPT_MAX_AGE_SECONDS,
  ),
  loadAsset(ALTCHA_CSS_PATH, new URL('../external/altcha.css', import.meta.resolve('altcha')), 'text/css; charset=utf-8', SCRIPT_MAX_AGE_SECONDS),
  // The solver of this service's algorithm (PBKDF2/SHA-256), run as a same-origin Web Worker.
  loadAsset(
    ALTCHA_WORKER_PATH,
    new URL('../workers/pbkdf2.js', import.meta.resolve('altcha')),
    'application/javascript; charset=utf-8',
    SCRIPT_MAX_AGE_SECONDS,
  ),
];

/** `limiter`: each client's challenges, limited as its submissions are (app.ts). */
export function altchaRoutes(deps: AppDeps, altcha: Altcha, limiter: RateLimiter): Router<AppState> {
  const router = createRouter();

  router.get(ALTCHA_SCRIPT_PATH, (ctx) => sendAsset(ctx, script));
  for (const asset of ownPageAssets) router.get(asset.path, (ctx) => sendAsset(ctx, asset));

  router.options(ALTCHA_CHALLENGE_PATH, challengeCors, challengePreflight);

  // CORS first, so that the widget can read a 429 too; the limit before the key, so that a flood
  // costs a Redis call per request and not a PostgreSQL one. An unknown key is remembered
  // (key-cache.ts).
  router.get(ALTCHA_CHALLENGE_PATH, challengeCors, limiter, async (ctx) => {
    // Only an active key gets challenges: each costs this process one key derivation.
    const accessKey = ctx.query.access_key;
    const key = typeof accessKey === 'string' && accessKey ? await deps.keys.find(() => ctx.state.em, accessKey) : null;
    if (!key) throw errors.invalidKey();
    const challenge = await altcha.challenge(key.id);
    // Every challenge is new and answered once: no cache may hand one out twice.
    ctx.set('Cache-Control', 'no-store');
    ctx.body = challenge;
  });

  return router;
}
