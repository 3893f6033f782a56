// A worker that starts while rspamd is still starting (npm start, a restart, a restore) takes no
// job until the filter answers: every email waiting for it is checked, none goes out unchecked
// because of the start. A filter that never answers holds the start for SPAM_FILTER_START_WAIT_MS
// only, then the worker runs, saying so in one WARN line.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { RspamdService } from '../../src/local/rspamd.ts';
import { createLogger } from '../../src/shared/infra/log.ts';
import { freePort } from '../../src/local/services.ts';
import { startWorker, type WorkerProcess } from '../../src/workers/worker.ts';
import { startHarness, type Harness } from '../support/harness.ts';
import { formMessage, settledRecord, spamFilterEnv, startSpamFilter, submitTo } from '../support/spam-filter.ts';

const TOKEN = 'spam-start-admin-token-0123456789';
let filter: RspamdService | undefined;
let h: Harness;
let dir: string;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  // A data directory: a restarted rspamd listens on the same socket, as under npm start.
  dir = await mkdtemp(path.join(tmpdir(), 'cfs-spam-start-'));
  filter = await startSpamFilter({ dir });
  // No worker yet: the emails wait in the queue, as they do across a restart.
  h = await startHarness({ worker: false, env: { ...spamFilterEnv(filter), ADMIN_TOKEN: TOKEN } });
}, 90_000);
afterAll(async () => {
  for (const worker of workers) await worker.shutdown.run();
  await h?.stop();
  await filter?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

it('a restart with pending emails checks every one of them', async () => {
  const key = await h.createKey();
  const ids: string[] = [];
  for (let n = 0; n < 4; n += 1) ids.push(await submitTo(h, key, formMessage('ham', n)));
  await filter!.stop();
  filter = undefined;
  // rspamd and the worker start together, as npm start and a container restart them.
  const [restarted] = await Promise.all([startSpamFilter({ dir }), h.startWorker()]);
  filter = restarted;
  for (const id of ids) {
    const record = await settledRecord(h, TOKEN, id);
    expect(record.email_status).toBe('sent');
    expect(record.spam.verdict).toBe('ham');
  }
  expect(h.sink.messages).toHaveLength(4);
}, 120_000);

it('a filter that never answers holds the start for SPAM_FILTER_START_WAIT_MS, then one WARN line without a stack', async () => {
  const port = await freePort(); // nothing listens there
  const lines: Array<{ level: number; msg: string; [field: string]: unknown }> = [];
  const log = createLogger('worker', 'info', { write: (line: string) => void lines.push(JSON.parse(line) as (typeof lines)[number]) });
  const url = `http://127.0.0.1:${port}`;
  workers.push(await startWorker({ ...h.config, SPAM_FILTER_URL: url, SPAM_FILTER_CONTROLLER_URL: url, SPAM_FILTER_START_WAIT_MS: 1_000 }, log));
  const warnings = lines.filter((line) => line.level === 40);
  expect(warnings).toHaveLength(1);
  expect(warnings[0]!.msg).toMatch(/^the spam filter did not answer within 1 s of the start \(.*ECONNREFUSED.*\): taking jobs anyway/);
  expect(warnings[0]).not.toHaveProperty('err');
  expect(workers.at(-1)!.worker.isRunning()).toBe(true);
});
