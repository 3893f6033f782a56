// The operations' part of the OpenAPI document (src/api/site/openapi.ts composes it): health and metrics.
import { adminSecurity } from '../site/openapi-parts.ts';

export const opsPaths = {
  '/healthz': { get: { summary: 'Liveness', responses: { 200: { description: 'The process is alive' } } } },
  '/readyz': {
    get: {
      summary: 'Readiness',
      responses: { 200: { description: 'PostgreSQL, Redis and storage answer' }, 503: { description: 'Something is down: {down: [...]}' } },
    },
  },
  '/metrics': {
    get: {
      summary: 'Prometheus metrics',
      security: adminSecurity,
      responses: {
        200: { description: 'Text exposition format' },
        401: { description: 'No valid admin token' },
        404: { description: 'ADMIN_TOKEN is not set' },
      },
    },
  },
};
