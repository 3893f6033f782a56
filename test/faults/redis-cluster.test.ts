// The queues live under one hash-tagged prefix, so the whole pipeline runs on a Redis Cluster: 3
// masters with a replica each.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, postJson, startHarness, type Harness } from '../support/harness.ts';
import { submitJson } from '../support/client.ts';
import { startRedisCluster, type RedisCluster } from '../support/redis-cluster.ts';

let cluster: RedisCluster;
let h: Harness;
beforeAll(async () => {
  cluster = await startRedisCluster();
  h = await startHarness({ env: { REDIS_URL: cluster.url, REDIS_CLUSTER: 'true', RATE_LIMIT_MAX: '21', RATE_LIMIT_WINDOW_MS: '60000' } });
});
afterAll(async () => {
  try {
    await h?.stop();
  } finally {
    await cluster?.stop();
  }
});

describe('on a Redis Cluster of 3 masters and 3 replicas', () => {
  it('accepts, rate-limits, queues and delivers submissions and key emails', async () => {
    const generated = await postJson(`${h.url}/`, { email: 'cluster-owner@example.test' });
    expect(generated.status).toBe(200);
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      const response = await submitJson(h, { access_key: generated.json.key, email: 'a@example.org', message: `cluster ${i}` });
      expect(response.status).toBe(200);
      ids.push(response.json.submission_id);
    }
    await eventually(
      async () => {
        const [row] = (await h.sql(`select count(*)::int as n from submissions where email_status = 'sent'`)) as [{ n: number }];
        return row.n === ids.length ? true : undefined;
      },
      30_000,
      'all submissions sent over the cluster',
    );
    await h.sink.waitFor(21);
    // The 22nd request of this client within the window is over RATE_LIMIT_MAX.
    const limited = await submitJson(h, { access_key: generated.json.key, email: 'a@example.org', message: 'one too many' });
    expect(limited.status).toBe(429);
    const ready = await fetch(`${h.url}/readyz`);
    expect(ready.status).toBe(200);
  });
});
