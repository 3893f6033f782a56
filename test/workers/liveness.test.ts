// A worker's /livez, the Kubernetes liveness probe's path (deploy/kubernetes/base/worker.yaml): 200
// while it takes jobs or none wait, 503 once jobs wait and it has started or finished none for
// WORKER_STALL_MS. A worker that stops taking jobs (here paused, as a wedged one would be) is
// restarted; an idle one is not.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { submitJson } from '../support/client.ts';
import { startHarness, type Harness } from '../support/harness.ts';
import { sleep } from '../support/sleep.ts';

const STALL_MS = 1_500;
let h: Harness;
let livez: string;

beforeAll(async () => {
  h = await startHarness({ worker: true, env: { METRICS_PORT: '0', ADMIN_TOKEN: 'an-operator-token-0123', WORKER_STALL_MS: String(STALL_MS) } });
});
afterAll(() => h?.stop());

/** Polls /livez until it answers `status`; the bound is generous for a busy machine. */
async function waitForStatus(status: number, withinMs = 30_000): Promise<number> {
  const started = Date.now();
  let last = 0;
  while (Date.now() - started < withinMs) {
    last = (await fetch(livez)).status;
    if (last === status) return Date.now() - started;
    await sleep(200);
  }
  throw new Error(`/livez answered ${last}, not ${status}, for ${withinMs} ms`);
}

describe("a worker's /livez", () => {
  it('answers 200 while idle, 503 once jobs wait that it does not take, and 200 again when it takes them', async () => {
    const port = h.workers[0]!.metricsPort;
    expect(port).toBeGreaterThan(0);
    livez = `http://127.0.0.1:${port}/livez`;
    // Idle past the stall time, with nothing waiting: alive.
    await sleep(STALL_MS + 500);
    expect((await fetch(livez)).status).toBe(200);

    await h.workers[0]!.worker.pause(true);
    const owner = await h.createKey({ email: 'owner@example.test' });
    // Three: a paused worker's fetch already under way may still take one.
    for (let i = 0; i < 3; i++) {
      const response = await submitJson(h, { access_key: owner.key, email: 'visitor@example.org', message: `Waiting for a worker ${i}` });
      expect(response.status).toBe(200);
    }
    await waitForStatus(503);

    void h.workers[0]!.worker.resume();
    await waitForStatus(200);
  });
});
