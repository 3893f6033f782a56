// When the SMTP server answers again, the email that tries it while the circuit breaker is open
// closes the breaker, and the backlog held behind it must leave at once, from every worker process:
// not one SMTP_PROBE_INTERVAL_MS later, when the delay the workers were told to wait would end.
// Two workers: the harness's own and a second OS process, which learns of the close only through Redis.
import { randomBytes } from 'node:crypto';
import type { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/shared/infra/log.ts';
import { createDeliveryQueue } from '../../src/shared/infra/queues/queues.ts';
import { closeRedis, createRedis, type RedisClient } from '../../src/shared/infra/queues/redis.ts';
import type { DeliveryJob } from '../../src/shared/deliveries/delivery-jobs.ts';
import { probeKey } from '../../src/shared/submissions/smtp-breaker-state.ts';
import { SmtpBreaker } from '../../src/workers/delivery/smtp-breaker.ts';
import { eventually, startHarness, type Harness } from '../support/harness.ts';
import { submitJson } from '../support/client.ts';
import { sentCount } from '../support/rows.ts';
import { spawnWorker, type WorkerChild } from '../support/workers.ts';

/** The shipped default: a late resumption costs this long. */
const PROBE_INTERVAL_MS = 30_000;
/** Generous against a busy machine, and still well below the probe interval. */
const FIRST_EMAIL_WITHIN_MS = 8_000;
const BACKLOG_WITHIN_MS = 20_000;
/** Enough that each worker takes a share while the SMTP server answers each message in 100 ms. */
const BACKLOG = 120;
const HOUR = '3600000';
let h: Harness;
let key: string;
let second: WorkerChild | undefined;
beforeAll(async () => {
  h = await startHarness({
    env: {
      // One refused message opens the breaker: this test is about its closing.
      SMTP_BREAKER_THRESHOLD: '1',
      SMTP_PROBE_INTERVAL_MS: String(PROBE_INTERVAL_MS),
      // The refused message waits for the flush when the breaker closes, not for its own timer.
      EMAIL_RETRY_BACKOFF_MS: HOUR,
      WORKER_CONCURRENCY: '4',
    },
  });
  key = (await h.createKey()).key;
  second = await spawnWorker(h.env);
}, 180_000);
afterAll(async () => {
  await second?.stop();
  await h?.stop();
});

async function submit(label: string): Promise<string> {
  const response = await submitJson(h, { access_key: key, email: 'visitor@example.org', message: label });
  expect(response.status).toBe(200);
  return response.json.submission_id as string;
}

async function breakerState(): Promise<string> {
  const ready = (await (await fetch(`${h.url}/readyz`)).json()) as { delivery: { smtp: { breaker: string } } };
  return ready.delivery.smtp.breaker;
}

type Sent = { id: string; worker: string; at: number };

async function sentAttempts(ids: string[]): Promise<Sent[]> {
  const rows = await h.sql<{ id: string; worker: string; at: Date }>(
    `select submission_id as id, worker, attempted_at as at from delivery_attempts
      where outcome = 'sent' and submission_id = any($1::uuid[]) order by attempted_at, id`,
    [ids],
  );
  return rows.map((row) => ({ id: row.id, worker: row.worker, at: row.at.getTime() }));
}

describe('the SMTP circuit breaker closing', () => {
  it('lets every worker send the backlog as soon as the relay accepts an email again', { timeout: 240_000 }, async () => {
    h.sink.delay(100);
    h.sink.behave(() => ({ code: 421, message: 'Service not available, closing transmission channel' }));
    await submit('refused: opens the breaker');
    await eventually(async () => ((await breakerState()) === 'open' ? true : undefined), 30_000, 'the breaker to open');

    const backlog: string[] = [];
    for (let start = 0; start < BACKLOG; start += 20) {
      backlog.push(...(await Promise.all(Array.from({ length: Math.min(20, BACKLOG - start) }, (_, i) => submit(`held ${start + i}`)))));
    }
    // The relay is back; the next try, up to a probe interval after the breaker opened, closes it.
    h.sink.behave(undefined);
    await eventually(async () => ((await sentCount(h, backlog)) === BACKLOG ? true : undefined), 4 * PROBE_INTERVAL_MS, 'the backlog to be sent');

    const sent = await sentAttempts(backlog);
    expect(sent).toHaveLength(BACKLOG);
    const probe = sent[0]!;
    const firstByWorker = new Map<string, number>();
    for (const attempt of sent.slice(1)) if (!firstByWorker.has(attempt.worker)) firstByWorker.set(attempt.worker, attempt.at - probe.at);
    const last = sent.at(-1)!.at - probe.at;
    console.info(`after the first accepted email: first of each worker ${JSON.stringify(Object.fromEntries(firstByWorker))} ms, last of ${BACKLOG} ${last} ms`);
    expect(firstByWorker.size).toBe(2);
    for (const [worker, after] of firstByWorker) expect(after, `first email of ${worker}`).toBeLessThan(FIRST_EMAIL_WITHIN_MS);
    expect(last).toBeLessThan(BACKLOG_WITHIN_MS);
    expect(await breakerState()).toBe('closed');
  });
});

describe('a delivery refused by the open breaker just as the probe closes it', () => {
  const prefix = `{t${randomBytes(5).toString('hex')}}`;
  const opened: Array<{ redis: RedisClient; queue: Queue<DeliveryJob> }> = [];
  afterAll(async () => {
    for (const { queue, redis } of opened) {
      await queue.close();
      await closeRedis(redis);
    }
  });

  /** One worker process's breaker; `beforeProbeWait` runs when it asks how long the probe still holds. */
  function workerBreaker(beforeProbeWait?: () => Promise<void>) {
    const redis = createRedis(h.config.REDIS_URL, 'worker');
    const queue = createDeliveryQueue<DeliveryJob>(redis, { QUEUE_PREFIX: prefix });
    opened.push({ redis, queue });
    const seen = new Proxy(redis, {
      get(target, property) {
        if (property === 'pttl' && beforeProbeWait)
          return async (name: string) => {
            await beforeProbeWait();
            return target.pttl(name);
          };
        const value: unknown = Reflect.get(target, property, target);
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
    const options = { prefix, threshold: 1, probeIntervalMs: PROBE_INTERVAL_MS };
    return { breaker: new SmtpBreaker(seen, queue, options, createLogger('test', 'silent')), queue, redis };
  }

  it('does not hold the queue again: its job goes ahead and no rate limit is left', async () => {
    const probing = workerBreaker();
    await probing.breaker.failed('closed', 'refused', '421 Service not available');
    // The probe interval is over: the next delivery tries the server.
    await probing.redis.del(probeKey(prefix));
    await probing.queue.removeRateLimitKey();
    expect(await probing.breaker.admit()).toBe('probe');

    // The other worker has read the breaker open and the probe taken; the probe succeeds before it goes on.
    const refused = workerBreaker(() => probing.breaker.succeeded('probe'));
    expect(await refused.breaker.admit()).toBe('closed');
    expect(await refused.queue.getRateLimitTtl()).toBeLessThanOrEqual(0);
  });
});
