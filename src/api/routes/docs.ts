// GET /openapi.json (generated from the request schemas) and GET /docs, a page rendered from it.
import type Router from '@koa/router';
import { createRouter } from '../router.ts';
import { escapeHtml } from '../../shared/html.ts';
import type { AppDeps, AppState } from '../context.ts';
import { buildOpenApi } from '../openapi.ts';
import { page, SECURITY_HEADERS, sendHtml } from './pages.ts';

type Operation = {
  summary?: string;
  description?: string;
  security?: unknown[];
  requestBody?: { content: Record<string, { schema: unknown }> };
  responses: Record<string, { description: string }>;
};

export function docsRoutes(deps: AppDeps): Router<AppState> {
  const router = createRouter();
  const document = buildOpenApi(deps.config.PUBLIC_URL);
  const html = renderDocs(document);

  router.get('/openapi.json', (ctx) => {
    ctx.body = document;
  });
  router.get('/docs', (ctx) => sendHtml(ctx, SECURITY_HEADERS, html));
  return router;
}

function renderDocs(document: ReturnType<typeof buildOpenApi>): string {
  const sections = Object.entries(document.paths).flatMap(([path, methods]) =>
    Object.entries(methods as Record<string, Operation>).map(([method, operation]) => {
      const bodies = Object.entries(operation.requestBody?.content ?? {})
        .map(([type, { schema }]) => `<h4>Request body: <code>${escapeHtml(type)}</code></h4><pre>${escapeHtml(JSON.stringify(schema, null, 2))}</pre>`)
        .join('');
      const responses = Object.entries(operation.responses)
        .map(([status, response]) => `<li><code>${escapeHtml(status)}</code> ${escapeHtml(response.description)}</li>`)
        .join('');
      return `<section>
<h2><code>${method.toUpperCase()} ${escapeHtml(path)}</code></h2>
${operation.summary ? `<p>${escapeHtml(operation.summary)}</p>` : ''}
${operation.description ? `<p>${escapeHtml(operation.description)}</p>` : ''}
${operation.security ? '<p>Requires <code>Authorization: Bearer &lt;ADMIN_TOKEN&gt;</code>.</p>' : ''}
${bodies}
<h4>Responses</h4><ul>${responses}</ul>
</section>`;
    }),
  );
  return page(
    'API documentation',
    `<h1>${escapeHtml(document.info.title)}: API</h1>
<p>${escapeHtml(document.info.description)} The machine-readable description is at <a href="/openapi.json">/openapi.json</a> (OpenAPI ${escapeHtml(document.openapi)}).</p>
${sections.join('\n')}`,
  );
}
