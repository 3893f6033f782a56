// GET /openapi.json (generated from the request schemas) and GET /docs, a page rendered from it.
import type Router from '@koa/router';
import { createRouter } from '../router.ts';
import type { AppDeps, AppState } from '../context.ts';
import { buildOpenApi, type RegisteredRoute } from './openapi.ts';
import { renderPage } from '../view.ts';

type Operation = {
  summary?: string;
  description?: string;
  security?: unknown[];
  requestBody?: { content: Record<string, { schema: unknown }> };
  responses: Record<string, { description: string }>;
};

/** `routes`: every route of the app's routers, read once on the first request (all exist by then). */
export function docsRoutes(deps: AppDeps, routes: () => RegisteredRoute[]): Router<AppState> {
  const router = createRouter();
  let built: { document: ReturnType<typeof buildOpenApi>; view: ReturnType<typeof docsView> } | undefined;
  const docs = () => {
    if (!built) {
      const document = buildOpenApi(deps.config.PUBLIC_URL, routes());
      built = { document, view: docsView(document) };
    }
    return built;
  };

  router.get('/openapi.json', (ctx) => {
    ctx.body = docs().document;
  });
  router.get('/docs', (ctx) => renderPage(ctx, 'docs', docs().view));
  return router;
}

/** The operations of the OpenAPI document, flattened for the docs view. */
function docsView(document: ReturnType<typeof buildOpenApi>) {
  const operations = Object.entries(document.paths).flatMap(([path, methods]) =>
    Object.entries(methods as Record<string, Operation>).map(([method, operation]) => ({
      method: method.toUpperCase(),
      path,
      summary: operation.summary ?? '',
      description: operation.description ?? '',
      admin: Boolean(operation.security),
      bodies: Object.entries(operation.requestBody?.content ?? {}).map(([type, { schema }]) => ({ type, schema: JSON.stringify(schema, null, 2) })),
      responses: Object.entries(operation.responses).map(([status, response]) => ({ status, description: response.description })),
    })),
  );
  return { info: document.info, openapi: document.openapi, operations };
}
