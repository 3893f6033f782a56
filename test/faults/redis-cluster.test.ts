// The queues live under one hash-tagged prefix, so the whole pipeline runs on a Redis Cluster: 3
// masters with a replica each. Then the master holding the service's keys is killed under a load,
// its replica takes over, and every submission answered 200 is delivered.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, postJson, startHarness, type Harness } from '../support/harness.ts';
import { solveChallenge, type Challenge } from 'altcha-lib';
import { deriveKey } from 'altcha-lib/algorithms/pbkdf2';
import { submitFrom, submitJson } from '../support/client.ts';
import { postForm } from '../support/owner.ts';
import { startRedisCluster, type RedisCluster } from '../support/redis-cluster.ts';
import { sentCount } from '../support/rows.ts';
import { abnormalAnswers, emailsPerSubmission, submitUntil, waitForAllSent } from '../support/load.ts';
import { createRedis, type RedisClient } from '../../src/shared/infra/queues/redis.ts';
import { withTimeout } from '../../src/shared/infra/timeout.ts';

/** Submissions answered 200 before the kill, and again after the switch. */
const PER_PHASE = 100;

let cluster: RedisCluster;
let h: Harness;
beforeAll(async () => {
  cluster = await startRedisCluster();
  h = await startHarness({
    env: {
      REDIS_URL: cluster.url,
      REDIS_CLUSTER: 'true',
      RATE_LIMIT_MAX: '21',
      RATE_LIMIT_WINDOW_MS: '60000',
      ALTCHA_MAX_COUNTER: '20',
      SMTP_BREAKER_THRESHOLD: '2',
      SMTP_PROBE_INTERVAL_MS: '500',
    },
  });
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
  it('keeps every key it writes under its hash tag, on the master of that one slot: queues, rate limits, breaker, ALTCHA replays', async () => {
    const prefix = h.config.QUEUE_PREFIX;
    // The ALTCHA replay store: an answer taken once, refused the second time.
    const altchaKey = await h.createKey({ captcha: 'altcha' });
    const challenge = (await (await fetch(`${h.url}/api/contact-api/altcha-challenge?access_key=${encodeURIComponent(altchaKey.key)}`)).json()) as Challenge;
    const solution = await solveChallenge({ challenge, deriveKey });
    const fields = {
      access_key: altchaKey.key,
      email: 'a@example.org',
      message: 'with ALTCHA',
      altcha: Buffer.from(JSON.stringify({ challenge, solution })).toString('base64'),
    };
    expect((await submitFrom(h, '127.0.0.7', fields)).status).toBe(200);
    expect((await submitFrom(h, '127.0.0.7', fields)).status).toBe(400);
    // The sign-in links' own rate limit.
    expect((await postForm(h, '/owner/link', { token: 'not-a-token' })).status).toBeLessThan(500);
    // The SMTP circuit breaker: the relay refuses until it opens.
    const { key } = await h.createKey();
    h.sink.refuse('rcpt-to', { code: 451, message: '4.3.0 Try again later' });
    const ids: string[] = [];
    let whileOpen: Map<number, string[]>;
    try {
      for (let n = 0; n < 3; n += 1) {
        const answer = await submitFrom(h, '127.0.0.8', { access_key: key, email: 'a@example.org', message: `breaker ${n}` });
        expect(answer.status).toBe(200);
        ids.push(answer.json.submission_id);
      }
      await eventually(
        async () =>
          ((await (await fetch(`${h.url}/readyz`)).json()) as { delivery: { smtp: { breaker: string } } }).delivery.smtp.breaker === 'open' ? true : undefined,
        30_000,
        'the breaker open',
      );
      whileOpen = await cluster.keysByMaster();
    } finally {
      h.sink.refuse('rcpt-to', undefined);
    }
    await eventually(async () => ((await sentCount(h, ids)) === ids.length ? true : undefined), 30_000, 'the refused emails sent');
    const afterwards = await cluster.keysByMaster();

    for (const keys of [whileOpen, afterwards]) {
      const holders = [...keys].filter(([, names]) => names.some((name) => name.startsWith(prefix))).map(([port]) => port);
      // One hash tag, one slot: a command over several of these keys can never span slots (CROSSSLOT).
      expect(holders).toHaveLength(1);
      const others = [...keys.values()].flat().filter((name) => !name.startsWith(prefix) && name !== '{probe}:x');
      expect(others).toEqual([]);
    }
    const written = [...whileOpen.values()].flat();
    for (const kind of [':deliveries:', ':webhooks:', ':housekeeping:', ':ratelimit:', ':sign-in:ratelimit:', ':altcha:', ':smtp-breaker']) {
      expect(
        written.some((name) => name.startsWith(prefix) && name.includes(kind)),
        `a key with ${kind}`,
      ).toBe(true);
    }
  });
});

describe('a master of the Redis Cluster killed under a load', () => {
  let loaded: Harness | undefined;
  afterAll(() => loaded?.stop());

  it('fails over to its replica: every 200 delivered, duplicates counted, every answer 200 or 503 with Retry-After', async () => {
    loaded = await startHarness({ env: { REDIS_URL: cluster.url, REDIS_CLUSTER: 'true', RECONCILE_INTERVAL_MS: '1000', RECONCILE_AFTER_MS: '5000' } });
    const h = loaded;
    const { key } = await h.createKey();
    // Every key of the service is under this hash tag: one slot, one master.
    const slot = await cluster.slotOf(h.config.QUEUE_PREFIX);
    let switchMs = 0;
    let acceptedAtSwitch = 0;
    const { answers, errors } = await submitUntil(h, key, 8, async (load) => {
      // Counted, not timed: a busy machine answers fewer in the same time.
      await eventually(async () => (load.accepted() >= PER_PHASE ? true : undefined), 120_000, `${PER_PHASE} submissions before the kill`);
      const { replicaPort, killedAt } = await cluster.killMasterOf(h.config.QUEUE_PREFIX);
      // Redis takes about twice the node timeout and an election; a busy machine may need several
      // elections. The wait is for the event, far past its usual time.
      await cluster.waitForOwner(replicaPort, slot, 120_000);
      switchMs = Date.now() - killedAt;
      acceptedAtSwitch = load.accepted();
      await eventually(async () => (load.accepted() >= acceptedAtSwitch + PER_PHASE ? true : undefined), 120_000, `${PER_PHASE} submissions after the switch`);
    });
    const ids = answers.filter((answer) => answer.status === 200).map((answer) => answer.id!);
    const unavailable = answers.filter((answer) => answer.status === 503).length;

    expect(errors).toEqual([]);
    expect(abnormalAnswers(answers)).toEqual([]);
    expect(switchMs).toBeGreaterThan(0);
    await waitForAllSent(h, ids, 120_000);
    const emails = emailsPerSubmission(h);
    expect(ids.filter((id) => !emails.has(id))).toEqual([]);
    const duplicated = ids.filter((id) => emails.get(id)! > 1);
    process.stdout.write(
      `cluster failover: switch ${switchMs} ms, ${ids.length} accepted (${acceptedAtSwitch} before the switch), ${unavailable} answered 503, ${duplicated.length} sent twice\n`,
    );
    // At most 0.1 % of them twice: the claim fences a job run again after the switch.
    expect(duplicated.length).toBeLessThanOrEqual(Math.floor(ids.length / 1_000));
    const ready = await fetch(`${h.url}/readyz`);
    expect(ready.status).toBe(200);
  }, 480_000);
});

describe('a cluster client connected again while a master is down', () => {
  it('settles every connection attempt once its replica has taken over, as BullMQ waits on it to reset a blocking connection', async () => {
    // Through a live node: the one the cluster's URL names may be the master killed above.
    const client = createRedis(`redis://127.0.0.1:${await cluster.replicaPort()}`, 'worker', { cluster: true });
    client.on('error', () => undefined);
    try {
      await withTimeout(client.ping(), 30_000, 'no answer from the cluster before the kill');
      // A key on a master that still has a replica: the queues' master was killed above.
      let down: { key: string; replicaPort: number } | undefined;
      for (const key of ['{reconnect-a}', '{reconnect-b}', '{reconnect-c}', '{reconnect-d}', '{reconnect-e}', '{reconnect-f}']) {
        const killed = await cluster.killMasterOf(key).catch(() => undefined);
        if (killed) down = { key, replicaPort: killed.replicaPort };
        if (down) break;
      }
      expect(down, 'a master with a replica to kill').toBeDefined();
      let settled = false;
      const promotion = cluster.waitForOwner(down!.replicaPort, await cluster.slotOf(down!.key), 120_000).finally(() => (settled = true));
      // Connected again and again while the cluster says `fail`, as a worker's blocking connection is reset.
      let attempts = 0;
      while (!settled) {
        attempts += 1;
        const ended = new Promise((resolve) => client.once('end', resolve));
        client.disconnect();
        await withTimeout(ended, 30_000, `the client not closed 30 s after attempt ${attempts - 1}`);
        await withTimeout(client.connect(), 30_000, `connection attempt ${attempts} not settled 30 s after it began`);
      }
      await promotion;
      expect(attempts).toBeGreaterThan(0);
      await client.set(down!.key, 'written');
      expect(await client.get(down!.key)).toBe('written');
    } finally {
      client.disconnect();
    }
  }, 240_000);
});

// Last in the file: it kills a replica, which a later failover of its master would need.
describe('a cluster client whose one named node died', () => {
  it('connects again through the nodes it found, and so do its copies (the connections BullMQ makes of it)', async () => {
    const named = await cluster.replicaPort();
    const connections: RedisClient[] = [];
    const open = (connection: RedisClient) => {
      connection.on('error', () => undefined);
      connections.push(connection);
      return connection;
    };
    const client = open(createRedis(`redis://127.0.0.1:${named}`, 'worker', { cluster: true }));
    const key = '{named-node}:probe';
    const readAll = (what: string) =>
      withTimeout(Promise.all(connections.map((connection) => connection.get(key))), 30_000, `no answer within 30 s ${what} (the named node: ${named})`);
    try {
      await client.set(key, 'written');
      open(client.duplicate());
      await readAll('from a copy made before the named node died');
      await cluster.kill(named);
      open(client.duplicate());
      await readAll('from a copy made after it died');
      // A full reconnection, as BullMQ makes of its blocking connection: through the startup nodes again.
      for (const connection of connections) connection.disconnect(true);
      expect(await readAll('after a reconnection')).toEqual(['written', 'written', 'written']);
    } finally {
      for (const connection of connections) connection.disconnect();
    }
  });
});
