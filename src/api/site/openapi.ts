// The OpenAPI 3.1 document, generated from the same valibot schemas that validate the requests
// (one source of truth), plus valibot descriptions of the responses. Its paths are the routes the
// app's routers register: one that has no description here still appears, marked
// `x-undescribed`, and a test keeps that list empty.
import { adminPaths } from '../admin/admin-openapi.ts';
import { consentPaths, keyPaths } from '../keys/keys-openapi.ts';
import { opsPaths } from '../ops/ops-openapi.ts';
import { ownerPaths, ownerSecuritySchemes } from '../owners/openapi.ts';
import { submissionPaths } from '../submissions/submissions-openapi.ts';
import { webhookEvents, webhookPaths } from '../webhooks/webhooks-openapi.ts';

/** A route as a router registered it: its methods and its path pattern (`/admin/keys/:key`). */
export type RegisteredRoute = { methods: string[]; path: string };

type Operation = { summary: string; responses: Record<string, unknown>; [detail: string]: unknown };
type Paths = Record<string, Record<string, Operation>>;

/** Static files of the pages: not part of the API. */
const isAsset = (path: string) => path.startsWith('/assets/') || path === '/favicon.svg';

/** The described operations, plus every registered route that has no description. */
function withRegisteredRoutes(described: Paths, routes: RegisteredRoute[]): Paths {
  const paths: Paths = structuredClone(described);
  for (const route of routes) {
    if (isAsset(route.path)) continue;
    const path = route.path.replace(/:(\w+)/g, '{$1}');
    for (const method of route.methods.map((name) => name.toLowerCase()).filter((name) => name !== 'head')) {
      paths[path] ??= {};
      paths[path][method] ??= { summary: `${method.toUpperCase()} ${path}`, 'x-undescribed': true, responses: {} };
    }
  }
  return paths;
}

/** The site's own pages and this document. */
const sitePaths = {
  '/contact/success/': {
    get: { summary: 'The page a plain HTML form lands on after a submission', responses: { 200: { description: 'HTML' } } },
  },
  '/contact/error/': {
    get: { summary: 'The page a plain HTML form lands on after a refusal (?error=)', responses: { 200: { description: 'HTML' } } },
  },
  '/openapi.json': { get: { summary: 'This document', responses: { 200: { description: 'OpenAPI 3.1 JSON' } } } },
  '/docs': { get: { summary: 'This document as a page', responses: { 200: { description: 'HTML' } } } },
};

export function buildOpenApi(publicUrl: string, routes: RegisteredRoute[]) {
  return {
    openapi: '3.1.0',
    info: {
      title: 'Contact form service',
      version: '1',
      description:
        'Accepts contact-form submissions, stores them, and delivers each as an email to the owner of the verification key, and as a signed webhook to the endpoints the owner set.',
    },
    servers: [{ url: publicUrl }],
    components: {
      securitySchemes: { adminToken: { type: 'http', scheme: 'bearer', description: 'ADMIN_TOKEN' }, ...ownerSecuritySchemes },
    },
    paths: withRegisteredRoutes(
      { ...keyPaths, ...submissionPaths, ...opsPaths, ...adminPaths, ...consentPaths, ...sitePaths, ...ownerPaths, ...webhookPaths },
      routes,
    ),
    webhooks: webhookEvents,
  };
}
