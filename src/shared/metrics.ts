// Prometheus metrics of this process (prom-client), exposed at GET /metrics.
import { Counter, Registry, collectDefaultMetrics } from 'prom-client';

export const registry = new Registry();
collectDefaultMetrics({ register: registry });

export const submissionsAccepted = new Counter({
  name: 'cfs_submissions_accepted_total',
  help: 'Submissions saved (answered 200)',
  registers: [registry],
});

export const submissionsRejected = new Counter({
  name: 'cfs_submissions_rejected_total',
  help: 'Submissions refused or discarded, by reason (an error id, or honeypot)',
  labelNames: ['reason'] as const,
  registers: [registry],
});
