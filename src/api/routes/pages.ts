// The service's own pages: the start page (request a key, try a live form) and the pages a plain
// HTML form lands on after a redirect. Small, accessible, no external resources; the only script
// is the start page's, served from this origin so the CSP needs no 'unsafe-inline'.
import type Router from '@koa/router';
import { createRouter } from '../router.ts';
import type { Config } from '../../shared/config.ts';
import type { AppContext, AppState } from '../context.ts';
import { escapeHtml } from '../../shared/html.ts';

const CSP_BASE = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

export const SECURITY_HEADERS = {
  'Content-Security-Policy': CSP_BASE,
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
};

/** The start page also runs its script and calls POST / with fetch, both on this origin only. */
const HOME_SECURITY_HEADERS = {
  ...SECURITY_HEADERS,
  'Content-Security-Policy': `${CSP_BASE}; script-src 'self'; connect-src 'self'`,
};

const STYLESHEET_PATH = '/assets/site.css';
const HOME_SCRIPT_PATH = '/assets/home.js';
const ICON_PATH = '/favicon.svg';

export function page(title: string, body: string, options: { scripts?: string[] } = {}): string {
  const scripts = (options.scripts ?? []).map((src) => `\n<script src="${escapeHtml(src)}" defer></script>`).join('');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>${escapeHtml(title)}</title>
<link rel="icon" href="${ICON_PATH}" type="image/svg+xml">
<link rel="stylesheet" href="${STYLESHEET_PATH}">${scripts}
</head>
<body>
<main id="main">
${body}
</main>
</body>
</html>`;
}

/** What the pages read from the config; without it, the defaults. */
export type PageDeps = { config: Pick<Config, 'HONEYPOT_FIELD' | 'PUBLIC_URL'> };

export function pageRoutes(deps: PageDeps): Router<AppState> {
  const router = createRouter();
  const honeypotField = deps.config.HONEYPOT_FIELD;
  const publicUrl = deps.config.PUBLIC_URL;

  router.get('/', (ctx) => {
    sendHtml(ctx, HOME_SECURITY_HEADERS, homePage(honeypotField, publicUrl));
  });

  router.get(STYLESHEET_PATH, (ctx) => sendAsset(ctx, 'text/css; charset=utf-8', STYLESHEET));
  router.get(HOME_SCRIPT_PATH, (ctx) => sendAsset(ctx, 'application/javascript; charset=utf-8', HOME_SCRIPT));
  router.get(ICON_PATH, (ctx) => sendAsset(ctx, 'image/svg+xml', ICON));

  router.get('/contact/success/', (ctx) => {
    const id = typeof ctx.query.submission_id === 'string' ? ctx.query.submission_id.slice(0, 64) : '';
    sendHtml(
      ctx,
      SECURITY_HEADERS,
      page(
        'Message sent',
        `<div class="card result result-ok">
<h1>Thank you!</h1>
<p role="status">Your message has been sent.</p>
${id ? `<p>Reference: <code>${escapeHtml(id)}</code></p>` : ''}
<p><a href="/">Back to the start page</a></p>
</div>`,
      ),
    );
  });

  router.get('/contact/error/', (ctx) => {
    const message = typeof ctx.query.error === 'string' ? ctx.query.error.slice(0, 500) : 'Something went wrong.';
    sendHtml(
      ctx,
      SECURITY_HEADERS,
      page(
        'Message not sent',
        `<div class="card result result-error">
<h1>Your message was not sent</h1>
<p role="alert">${escapeHtml(message)}</p>
<p>Please go back, correct the form and try again.</p>
<p><a href="/">Back to the start page</a></p>
</div>`,
      ),
    );
  });

  return router;
}

export function sendHtml(ctx: AppContext, headers: Record<string, string>, html: string): void {
  ctx.set(headers);
  ctx.set('Cache-Control', 'no-store');
  ctx.type = 'html';
  ctx.body = html;
}

function sendAsset(ctx: AppContext, type: string, content: string): void {
  ctx.set({ 'X-Content-Type-Options': 'nosniff', 'Cache-Control': 'public, max-age=300' });
  ctx.type = type;
  ctx.body = content;
}

function homePage(honeypotField: string, publicUrl: string | undefined): string {
  const field = escapeHtml(honeypotField);
  // Markers for the two parts the page fills in: the service's address (from the config, else the
  // script uses location.origin) and a generated key.
  const ORIGIN = '\u0000origin\u0000';
  const KEY = '\u0000key\u0000';
  const snippet = escapeHtml(
    [
      `<form method="POST" enctype="multipart/form-data"`,
      `      action="${ORIGIN}/api/contact-api/">`,
      `  <input type="hidden" name="access_key" value="${KEY}">`,
      `  <label>Email <input type="email" name="email" required></label>`,
      `  <label>Message <textarea name="message" required></textarea></label>`,
      `  <label>File <input type="file" name="attachment"></label>`,
      `  <!-- A trap for bots: people never see it, so never fill it in. -->`,
      `  <input type="text" name="${honeypotField}" style="display:none"`,
      `         tabindex="-1" autocomplete="off">`,
      `  <button type="submit">Send</button>`,
      `</form>`,
    ].join('\n'),
  )
    .replace(ORIGIN, `<span data-service-origin>${escapeHtml(publicUrl ?? '')}</span>`)
    .replace(KEY, '<span data-snippet-key>YOUR_ACCESS_KEY</span>');

  return page(
    'Contact form service',
    `<header class="intro">
<h1>Contact form service</h1>
<p>Receive the messages of your website's contact form by email, files included. Get an access key
for your address, then point your form at this service.</p>
</header>

<section class="card" aria-labelledby="key-heading">
<h2 id="key-heading"><span class="step" aria-hidden="true">1</span> Get an access key</h2>
<p>The key is shown here and emailed to you. Messages sent with it are delivered to that address.</p>
<form id="key-form" novalidate>
<div class="field">
<label for="key-email">Your email address</label>
<input id="key-email" name="email" type="email" autocomplete="email" required maxlength="254" aria-describedby="key-email-hint">
<p id="key-email-hint" class="hint">Where the key, or your existing keys, are sent.</p>
</div>
<div class="actions">
<button type="submit" name="requestType" value="generateKey">Generate a new key</button>
<button type="submit" name="requestType" value="getKeys" class="secondary">Email me my keys</button>
</div>
</form>
<noscript><p class="hint">This part needs JavaScript. Without it, send
<code>{"email": "you@example.com", "requestType": "generateKey"}</code> as JSON in a POST to <code>/</code>.</p></noscript>
<div id="key-status" class="status" role="status" aria-live="polite" aria-atomic="true"></div>
</section>

<section class="card" aria-labelledby="try-heading">
<h2 id="try-heading"><span class="step" aria-hidden="true">2</span> Try the contact form</h2>
<p>A plain HTML form that posts to this service. Send it, and the message arrives at the key's address.</p>
<form id="contact-form" method="POST" action="/api/contact-api/" enctype="multipart/form-data">
<div class="field">
<label for="access_key">Access key</label>
<input id="access_key" name="access_key" type="text" required maxlength="64" autocomplete="off" spellcheck="false" class="mono" aria-describedby="access-key-hint">
<p id="access-key-hint" class="hint">Filled in when you generate a key above; or paste one you have.</p>
</div>
<div class="field">
<label for="contact-email">Your email address</label>
<input id="contact-email" name="email" type="email" autocomplete="email" required maxlength="254" aria-describedby="contact-email-hint">
<p id="contact-email-hint" class="hint">The reply address of the message.</p>
</div>
<div class="field">
<label for="contact-message">Message</label>
<textarea id="contact-message" name="message" rows="5" required></textarea>
</div>
<div class="field">
<label for="contact-file">Attachment <span class="optional">(optional)</span></label>
<input id="contact-file" name="attachment" type="file" multiple>
</div>
<div class="visually-hidden" aria-hidden="true">
<label for="${field}">Leave this field empty</label>
<input id="${field}" name="${field}" type="text" tabindex="-1" autocomplete="off">
</div>
<div class="actions">
<button type="submit">Send message</button>
</div>
</form>
</section>

<section class="card" aria-labelledby="use-heading">
<h2 id="use-heading"><span class="step" aria-hidden="true">3</span> Use it on your site</h2>
<p>Copy this form into your page. Any other field you add is included in the email.
Scripts can post the same fields with <code>fetch()</code> and <code>Accept: application/json</code> to get JSON.</p>
<pre tabindex="0" role="region" aria-label="Example form markup"><code>${snippet}</code></pre>
</section>`,
    { scripts: [HOME_SCRIPT_PATH] },
  );
}

// An envelope: the browser asks for an icon on every page, and a 404 would be logged each time.
const ICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="7" fill="#0a58ca"/>\
<rect x="6" y="9" width="20" height="14" rx="2" fill="none" stroke="#fff" stroke-width="2"/>\
<path d="M7 10.5l9 6.5 9-6.5" fill="none" stroke="#fff" stroke-width="2" stroke-linejoin="round"/></svg>
`;

const STYLESHEET = `:root{color-scheme:light dark;--fg:#1b1f24;--muted:#57606a;--bg:#f6f8fa;--card:#fff;--border:#d0d7de;
--accent:#0a58ca;--accent-hover:#084298;--accent-fg:#fff;--ok:#116329;--ok-bg:#dafbe1;--err:#a40e26;--err-bg:#ffebe9;--focus:#d97706}
@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--muted:#9da7b3;--bg:#0d1117;--card:#161b22;--border:#30363d;
--accent:#4493f8;--accent-hover:#79b0fa;--accent-fg:#0d1117;--ok:#56d364;--ok-bg:#12261e;--err:#ff7b72;--err-bg:#2d1215;--focus:#f0b429}}
*,*::before,*::after{box-sizing:border-box}
html{-webkit-text-size-adjust:100%}
body{margin:0;padding:2.5rem 1rem 4rem;font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;
font-size:1rem;line-height:1.55;color:var(--fg);background:var(--bg)}
main{max-width:40rem;margin:0 auto}
h1{font-size:1.9rem;line-height:1.2;margin:0 0 .5rem}
h2{font-size:1.25rem;margin:0 0 .5rem;display:flex;align-items:center;gap:.6rem}
p{margin:.5rem 0}
a{color:var(--accent)}
a:hover{color:var(--accent-hover)}
code,pre,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono",monospace;font-size:.9em}
code{overflow-wrap:anywhere}
pre{margin:.75rem 0 0;padding:.9rem 1rem;overflow-x:auto;background:var(--bg);border:1px solid var(--border);border-radius:6px;line-height:1.45}
pre code{word-break:normal;white-space:pre}
.intro{margin-bottom:1.5rem}
.intro p{color:var(--muted);font-size:1.05rem}
.card{background:var(--card);border:1px solid var(--border);border-radius:10px;padding:1.5rem;margin:0 0 1.25rem}
.step{display:inline-flex;align-items:center;justify-content:center;width:1.7rem;height:1.7rem;border-radius:50%;
background:var(--accent);color:var(--accent-fg);font-size:.95rem;font-weight:700;flex:none}
.field{margin:1rem 0}
label{display:block;font-weight:600;margin-bottom:.3rem}
.optional{font-weight:400;color:var(--muted)}
.hint{margin:.3rem 0 0;font-size:.9rem;color:var(--muted)}
input[type=text],input[type=email],textarea{display:block;width:100%;padding:.55rem .7rem;font:inherit;color:inherit;
background:var(--card);border:1px solid var(--border);border-radius:6px}
input.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono",monospace;font-size:.95rem}
textarea{resize:vertical;min-height:7rem}
input[type=file]{font:inherit;max-width:100%}
.actions{display:flex;flex-wrap:wrap;gap:.75rem;margin-top:1.25rem}
button{font:inherit;font-weight:600;padding:.55rem 1.1rem;border-radius:6px;border:1px solid var(--accent);
background:var(--accent);color:var(--accent-fg);cursor:pointer}
button:hover{background:var(--accent-hover);border-color:var(--accent-hover)}
button.secondary{background:transparent;color:var(--accent)}
button.secondary:hover{background:var(--bg);color:var(--accent-hover)}
button:disabled{opacity:.6;cursor:progress}
:focus-visible{outline:3px solid var(--focus);outline-offset:2px}
input:focus-visible,textarea:focus-visible{outline-offset:0;border-color:var(--focus)}
[aria-invalid=true]{border-color:var(--err)}
.status:not(:empty){margin-top:1.25rem;padding:.8rem 1rem;border-radius:6px;border:1px solid var(--border)}
.status.ok{background:var(--ok-bg);border-color:var(--ok);color:var(--fg)}
.status.error{background:var(--err-bg);border-color:var(--err);color:var(--fg)}
.status p{margin:.25rem 0}
.status code{font-size:1rem;font-weight:600}
.result h1{font-size:1.6rem}
.result-ok{border-top:4px solid var(--ok)}
.result-error{border-top:4px solid var(--err)}
.visually-hidden{position:absolute!important;width:1px;height:1px;padding:0;margin:-1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap;border:0}
@media (prefers-reduced-motion:no-preference){button{transition:background-color .15s,color .15s}}
`;

// Plain browser JavaScript (no build step); it touches the DOM only through textContent.
const HOME_SCRIPT = `'use strict';
(function () {
  var keyForm = document.getElementById('key-form');
  var status = document.getElementById('key-status');
  var accessKey = document.getElementById('access_key');
  var emailInput = document.getElementById('key-email');
  if (!keyForm || !status || !accessKey || !emailInput) return;

  var origin = location.origin;
  document.querySelectorAll('[data-service-origin]').forEach(function (node) {
    if (!node.textContent) node.textContent = origin;
  });

  function show(kind, lines, key) {
    status.className = 'status ' + kind;
    var nodes = lines.filter(Boolean).map(function (text) {
      var p = document.createElement('p');
      p.textContent = text;
      return p;
    });
    if (key) {
      var p = document.createElement('p');
      p.append('Your key: ');
      var code = document.createElement('code');
      code.id = 'generated-key';
      code.textContent = key;
      p.append(code);
      nodes.push(p);
      var note = document.createElement('p');
      note.textContent = 'It has been filled in the contact form below.';
      nodes.push(note);
    }
    status.replaceChildren.apply(status, nodes);
  }

  function fieldErrors(body) {
    var errors = body && body.errors;
    if (!errors || typeof errors !== 'object') return [];
    return Object.keys(errors)
      .filter(function (name) { return name !== '__all__' && Array.isArray(errors[name]); })
      .map(function (name) { return name + ': ' + errors[name].join(' '); });
  }

  keyForm.addEventListener('submit', function (event) {
    event.preventDefault();
    if (!emailInput.checkValidity()) {
      emailInput.setAttribute('aria-invalid', 'true');
      show('error', ['Enter a valid email address.']);
      emailInput.focus();
      return;
    }
    emailInput.removeAttribute('aria-invalid');
    var submitter = event.submitter;
    var requestType = submitter && submitter.value === 'getKeys' ? 'getKeys' : 'generateKey';
    var buttons = keyForm.querySelectorAll('button');
    buttons.forEach(function (button) { button.disabled = true; });
    keyForm.setAttribute('aria-busy', 'true');
    show('', ['Sending\\u2026']);

    fetch('/', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
      body: JSON.stringify({ email: emailInput.value.trim(), requestType: requestType }),
    })
      .then(function (response) {
        return response.json().catch(function () { return null; }).then(function (body) {
          if (!body || typeof body.message !== 'string') {
            show('error', ['The service answered with status ' + response.status + '. Please try again.']);
            return;
          }
          if (!body.success) {
            show('error', [body.message].concat(fieldErrors(body)));
            return;
          }
          if (typeof body.key === 'string') {
            accessKey.value = body.key;
            document.querySelectorAll('[data-snippet-key]').forEach(function (node) { node.textContent = body.key; });
          }
          show('ok', [body.message], typeof body.key === 'string' ? body.key : undefined);
        });
      })
      .catch(function () {
        show('error', ['The service could not be reached. Please try again.']);
      })
      .finally(function () {
        buttons.forEach(function (button) { button.disabled = false; });
        keyForm.removeAttribute('aria-busy');
      });
  });
})();
`;
