// The queues live under one hash-tagged prefix, so the whole pipeline runs on a Redis Cluster: 3
// masters with a replica each. Then the master holding the service's keys is killed under a load,
// its replica takes over, and every submission answered 200 is delivered.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, postJson, startHarness, type Harness } from '../support/harness.ts';
import { submitJson } from '../support/client.ts';
import { startRedisCluster, type RedisCluster } from '../support/redis-cluster.ts';
import { sentCount } from '../support/rows.ts';
import { abnormalAnswers, emailsPerSubmission, submitUntil } from '../support/load.ts';

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

describe('a master of the Redis Cluster killed under a load', () => {
  let loaded: Harness;
  afterAll(() => loaded?.stop());

  it('fails over to its replica: every 200 delivered, every answer 200 or 503 with Retry-After', async () => {
    loaded = await startHarness({ env: { REDIS_URL: cluster.url, REDIS_CLUSTER: 'true', RECONCILE_INTERVAL_MS: '1000', RECONCILE_AFTER_MS: '5000' } });
    const { key } = await loaded.createKey();
    // Every key of the service is under this hash tag: one slot, one master.
    const tag = loaded.config.QUEUE_PREFIX;
    let killed = 0;
    const failover = (async () => {
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      killed = await cluster.killMasterOf(tag);
      await eventually(
        async () => {
          const port = cluster.masterPortOf(tag);
          return port !== undefined && port !== killed ? true : undefined;
        },
        30_000,
        'the replica promoted',
      );
      await new Promise((resolve) => setTimeout(resolve, 3_000));
    })();
    const { answers, errors } = await submitUntil(loaded, key, 8, failover);
    await failover;

    expect(errors).toEqual([]);
    expect(abnormalAnswers(answers)).toEqual([]);
    const ids = answers.filter((answer) => answer.status === 200).map((answer) => answer.id!);
    expect(ids.length).toBeGreaterThan(50);
    await eventually(async () => ((await sentCount(loaded, ids)) === ids.length ? true : undefined), 60_000, 'every accepted submission sent');
    const emails = emailsPerSubmission(loaded);
    expect(ids.filter((id) => !emails.has(id))).toEqual([]);
    // At most 0.1 % of them twice: the claim fences a job run again after the switch.
    expect(ids.filter((id) => emails.get(id)! > 1).length).toBeLessThanOrEqual(Math.floor(ids.length / 1_000));
    const ready = await fetch(`${loaded.url}/readyz`);
    expect(ready.status).toBe(200);
  }, 180_000);
});
