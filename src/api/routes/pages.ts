// The pages a plain HTML form lands on after a redirect: small, accessible, no script.
import Router from '@koa/router';
import type { AppState } from '../context.ts';
import { escapeHtml } from '../../shared/html.ts';

const SECURITY_HEADERS = {
  'Content-Security-Policy': "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
};

export function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:36rem;margin:4rem auto;padding:0 1rem;line-height:1.5;color:#1a1a1a}
main{border:1px solid #ddd;border-radius:8px;padding:1.5rem}code{word-break:break-all}</style>
</head>
<body>
<main>
${body}
</main>
</body>
</html>`;
}

export function pageRoutes(): Router<AppState> {
  const router = new Router<AppState>();

  router.get('/contact/success/', (ctx) => {
    const id = typeof ctx.query.submission_id === 'string' ? ctx.query.submission_id.slice(0, 64) : '';
    ctx.set(SECURITY_HEADERS);
    ctx.type = 'html';
    ctx.body = page(
      'Message sent',
      `<h1>Thank you!</h1>
<p role="status">Your message has been sent.</p>
${id ? `<p>Reference: <code>${escapeHtml(id)}</code></p>` : ''}`,
    );
  });

  router.get('/contact/error/', (ctx) => {
    const message = typeof ctx.query.error === 'string' ? ctx.query.error.slice(0, 500) : 'Something went wrong.';
    ctx.set(SECURITY_HEADERS);
    ctx.type = 'html';
    ctx.body = page(
      'Message not sent',
      `<h1>Your message was not sent</h1>
<p role="alert">${escapeHtml(message)}</p>
<p>Please go back, correct the form and try again.</p>`,
    );
  });

  return router;
}
