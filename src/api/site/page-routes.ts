// The service's own pages: the start page (request a key, try a live form) and the pages a plain
// HTML form lands on after a redirect, plus their static assets. Small, accessible, no external
// resources; the only scripts are the start page's (its own and the ALTCHA widget's), served from
// this origin so the CSP needs no 'unsafe-inline'. The markup is in src/api/views, the assets in src/api/assets.
import type Router from '@koa/router';
import type { Config } from '../../shared/infra/config.ts';
import type { AppState } from '../context.ts';
import { createRouter } from '../router.ts';
import { ALTCHA_CSS_PATH, ALTCHA_EXTERNAL_SCRIPT_PATH } from '../submissions/altcha-routes.ts';
import { loadAsset, renderPage, SCRIPTED_PAGE_HEADERS, sendAsset } from '../view.ts';

const ASSETS = [
  loadAsset('/assets/site.css', 'site.css', 'text/css; charset=utf-8'),
  loadAsset('/assets/home.js', 'home.js', 'application/javascript; charset=utf-8'),
  loadAsset('/assets/owner.js', 'owner.js', 'application/javascript; charset=utf-8'),
  // The browser asks for an icon on every page; a 404 would be logged each time.
  loadAsset('/favicon.svg', 'favicon.svg', 'image/svg+xml'),
];

/** What the pages read from the config. */
export type PageDeps = { config: Pick<Config, 'HONEYPOT_FIELD' | 'PUBLIC_URL'> };

export function pageRoutes(deps: PageDeps): Router<AppState> {
  const router = createRouter();

  router.get('/', (ctx) =>
    renderPage(
      ctx,
      'home',
      {
        honeypot_field: deps.config.HONEYPOT_FIELD,
        public_url: deps.config.PUBLIC_URL,
        // The live form's ALTCHA widget: the build whose styles are a file, as the CSP wants them.
        scripts: [ALTCHA_EXTERNAL_SCRIPT_PATH, '/assets/home.js'],
        styles: [ALTCHA_CSS_PATH],
      },
      { headers: SCRIPTED_PAGE_HEADERS },
    ),
  );

  for (const asset of ASSETS) router.get(asset.path, (ctx) => sendAsset(ctx, asset));

  router.get('/contact/success/', (ctx) => {
    const id = typeof ctx.query.submission_id === 'string' ? ctx.query.submission_id.slice(0, 64) : '';
    renderPage(ctx, 'success', { submission_id: id });
  });

  router.get('/contact/error/', (ctx) => {
    const message = typeof ctx.query.error === 'string' ? ctx.query.error.slice(0, 500) : 'Something went wrong.';
    // Each field the error names, and why, one a line.
    const details = typeof ctx.query.detail === 'string' ? ctx.query.detail.slice(0, 1000).split('\n').filter(Boolean).slice(0, 20) : [];
    renderPage(ctx, 'error', { message, details });
  });

  return router;
}
