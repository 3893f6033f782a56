// Prometheus metrics on the API (GET /metrics, behind the admin token) and on a worker (METRICS_PORT).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/local/services.ts';
import { eventually, startHarness, type Harness } from '../support/harness.ts';
import { emailStatusOf } from '../support/rows.ts';
import { submitJson } from '../support/client.ts';
import { describeBuild } from '../../src/shared/infra/version.ts';

const TOKEN = 'metrics-test-admin-token';
let h: Harness;
let workerMetrics: string;
beforeAll(async () => {
  const port = await freePort();
  h = await startHarness({ env: { METRICS_PORT: String(port), ADMIN_TOKEN: TOKEN } });
  workerMetrics = `http://127.0.0.1:${port}/metrics`;
});
afterAll(() => h?.stop());

const metricValue = (text: string, pattern: RegExp) => Number(pattern.exec(text)?.[1] ?? NaN);

describe('metrics', () => {
  it('counts requests by route and status, submissions, deliveries and queue depth', async () => {
    const key = await h.createKey();
    const ok = await submitJson(h, { access_key: key.key, email: 'a@example.org', message: 'count me' });
    await submitJson(h, { access_key: key.key });
    await eventually(async () => ((await emailStatusOf(h, ok.json.submission_id)) === 'sent' ? true : undefined));

    const api = await (await fetch(`${h.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).text();
    expect(metricValue(api, /cfs_http_request_duration_seconds_count\{method="POST",route="\/api\/contact-api\/",status="200"\} (\d+)/)).toBeGreaterThanOrEqual(
      1,
    );
    expect(metricValue(api, /cfs_http_request_duration_seconds_count\{method="POST",route="\/api\/contact-api\/",status="400"\} (\d+)/)).toBeGreaterThanOrEqual(
      1,
    );
    expect(metricValue(api, /cfs_submissions_accepted_total (\d+)/)).toBeGreaterThanOrEqual(1);
    expect(metricValue(api, /cfs_submissions_rejected_total\{reason="missing_fields"\} (\d+)/)).toBeGreaterThanOrEqual(1);
    expect(api).toMatch(/cfs_queue_jobs\{state="waiting"\} \d+/);
    expect(api).toMatch(/cfs_queue_jobs\{state="failed"\} \d+/);

    const worker = await (await fetch(workerMetrics, { headers: { authorization: `Bearer ${TOKEN}` } })).text();
    expect(metricValue(worker, /cfs_deliveries_total\{kind="submissions",outcome="sent"\} (\d+)/)).toBeGreaterThanOrEqual(1);
    expect(metricValue(worker, /cfs_delivery_latency_seconds_count\{kind="submissions"\} (\d+)/)).toBeGreaterThanOrEqual(1);
    expect(worker).toContain('cfs_delivery_retries_total');
    expect((await fetch(workerMetrics.replace('/metrics', '/other'))).status).toBe(404);
  });

  it('says which version each process runs: cfs_build_info on the API and the worker, and /readyz', async () => {
    // This checkout's: a release's version, or the commits since it (X.Y.Z+N.gHASH).
    const { version, commit } = describeBuild();
    const headers = { authorization: `Bearer ${TOKEN}` };
    for (const url of [`${h.url}/metrics`, workerMetrics]) {
      expect(await (await fetch(url, { headers })).text()).toContain(`cfs_build_info{version="${version}",commit="${commit}"} 1\n`);
    }
    const ready = await fetch(`${h.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ status: 'ready', version });
  });

  it('keeps the API and worker metrics from anyone without the admin token', async () => {
    for (const headers of [{}, { authorization: 'Bearer wrong-token-0123456789' }, { authorization: `Basic ${Buffer.from(':nope').toString('base64')}` }]) {
      for (const url of [`${h.url}/metrics`, workerMetrics]) {
        const response = await fetch(url, { headers });
        expect(response.status).toBe(401);
        expect(await response.text()).not.toContain('cfs_');
      }
    }
    // Basic with the token as password works on both, as for the queue dashboard.
    const basic = { authorization: `Basic ${Buffer.from(`ops:${TOKEN}`).toString('base64')}` };
    expect(await (await fetch(workerMetrics, { headers: basic })).text()).toContain('cfs_deliveries_total');
    const unset = await startHarness({ worker: false });
    try {
      const response = await fetch(`${unset.url}/metrics`);
      expect(response.status).toBe(404);
      expect(await response.text()).not.toContain('cfs_');
    } finally {
      await unset.stop();
    }
  });
});
