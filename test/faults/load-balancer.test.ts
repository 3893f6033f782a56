// Three API processes behind a real HAProxy (Debian's 2.6), as docs/deploying.md shows it:
// X-Forwarded-For from the balancer, TRUST_PROXY naming it. The rate limit counts each client
// across the three processes, the recorded address is the client's, and a rolling restart under a
// load (the balancer takes a process out, then it stops, starts again and comes back) costs no
// request anything but a normal answer.
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { freePort, stopChild } from '../../src/local/services.ts';
import { spawnTracked } from '../../src/local/processes.ts';
import { CONTACT_API } from '../support/client.ts';
import { eventually, startHarness, type Harness, type TestKey } from '../support/harness.ts';
import { request, type RawResponse } from '../support/http.ts';
import { spawnApi, type WorkerChild } from '../support/workers.ts';
import { sleep } from '../support/sleep.ts';

const API_COUNT = 3;
/** The service's own rate limit: one public POST per client address every 3 s. */
const WINDOW_MS = 3_000;

let h: Harness;
let key: TestKey;
let dir: string;
let haproxy: ChildProcess | undefined;
let balancerUrl: string;
let socketPath: string;
const apis: Array<{ port: number; process?: WorkerChild }> = [];

function apiEnv(port: number): Record<string, string> {
  return {
    ...h.env,
    PORT: String(port),
    // The balancer connects from 127.0.0.1: its X-Forwarded-For is believed, a client's is not.
    TRUST_PROXY: '127.0.0.1',
    // Every connection comes from the balancer: the per-address connection cap would count it alone.
    CONNECTIONS_PER_IP: '0',
    RATE_LIMIT_MAX: '1',
    RATE_LIMIT_WINDOW_MS: String(WINDOW_MS),
  };
}

function haproxyConfig(frontPort: number): string {
  return [
    'global',
    `  stats socket ${socketPath} mode 600 level admin`,
    'defaults',
    '  mode http',
    '  timeout connect 2s',
    '  timeout client 30s',
    '  timeout server 30s',
    '  option forwardfor',
    'frontend web',
    `  bind 127.0.0.1:${frontPort}`,
    '  default_backend api',
    'backend api',
    '  balance roundrobin',
    '  option httpchk GET /readyz',
    '  http-check expect status 200',
    '  default-server inter 300ms fall 2 rise 2',
    // Without it a check may take only `inter`: on a busy machine, a /readyz slower than 300 ms
    // could take every process out at once, and HAProxy would answer 503 itself.
    '  timeout check 2s',
    ...apis.map((api, index) => `  server api${index} 127.0.0.1:${api.port} check`),
    '',
  ].join('\n');
}

/** One command of HAProxy's runtime API, and its answer. */
function runtime(command: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(socketPath);
    let answer = '';
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString()));
    socket.on('end', () => resolve(answer));
    socket.on('error', reject);
    socket.end(`${command}\n`);
  });
}

/** The balancer's view of one API process: its status (UP, DOWN, MAINT) and its sessions now. */
async function serverState(index: number): Promise<{ status: string; sessions: number }> {
  const [header, ...rows] = (await runtime('show stat')).trim().split('\n');
  const names = header!.replace(/^# /, '').split(',');
  for (const row of rows) {
    const fields = Object.fromEntries(row.split(',').map((value, at) => [names[at], value]));
    if (fields.pxname === 'api' && fields.svname === `api${index}`) return { status: fields.status!, sessions: Number(fields.scur) };
  }
  throw new Error(`api${index} is not in the balancer's table`);
}

beforeAll(async () => {
  h = await startHarness();
  key = await h.createKey();
  dir = await mkdtemp(path.join(tmpdir(), 'cfs-haproxy-'));
  socketPath = path.join(dir, 'admin.sock');
  for (let index = 0; index < API_COUNT; index += 1) {
    const port = await freePort();
    apis.push({ port, process: await spawnApi(apiEnv(port)) });
  }
  const frontPort = await freePort();
  balancerUrl = `http://127.0.0.1:${frontPort}`;
  await writeFile(path.join(dir, 'haproxy.cfg'), haproxyConfig(frontPort));
  const found = inject('testTools').haproxy!;
  if (found.problem !== undefined) throw new Error(found.problem);
  haproxy = spawnTracked('SIGTERM', found.path, ['-f', path.join(dir, 'haproxy.cfg'), '-db'], { stdio: ['ignore', 'ignore', 'pipe'] });
  for (let index = 0; index < API_COUNT; index += 1)
    await eventually(async () => ((await serverState(index).catch(() => undefined))?.status === 'UP' ? true : undefined));
}, 120_000);

afterAll(async () => {
  if (haproxy) await stopChild(haproxy, 'SIGTERM', 5_000);
  for (const api of apis) await api.process?.stop();
  await h?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** A submission through the balancer from one loopback address, with headers of its own. */
const submitThrough = (from: string, message: string, headers: Record<string, string> = {}): Promise<RawResponse> =>
  request(`${balancerUrl}${CONTACT_API}`, {
    method: 'POST',
    localAddress: from,
    headers: { 'content-type': 'application/json', accept: 'application/json', ...headers },
    body: JSON.stringify({ access_key: key.key, email: 'visitor@example.org', message }),
  });

const clientIpOf = async (id: string) => (await h.sql<{ ip: string }>('select client_ip as ip from submissions where id = $1', [id]))[0]?.ip;

it('counts each client across the three processes and records its own address, not the balancer', async () => {
  // Three at once from one address: the balancer hands them to the three processes in turn.
  const burst = await Promise.all([1, 2, 3].map((n) => submitThrough('127.0.0.2', `burst ${n}`)));
  expect(burst.map((answer) => answer.status).sort()).toEqual([200, 429, 429]);
  for (const refused of burst.filter((answer) => answer.status === 429)) expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
  // Another client is counted on its own.
  const other = await submitThrough('127.0.0.3', 'another client');
  expect(other.status).toBe(200);
  // A client naming another address itself is still counted and recorded by its own.
  const spoofed = await submitThrough('127.0.0.4', 'a forged header', { 'X-Forwarded-For': '203.0.113.9' });
  expect(spoofed.status).toBe(200);

  const accepted = burst.find((answer) => answer.status === 200)!;
  expect(await clientIpOf(accepted.json.submission_id)).toBe('127.0.0.2');
  expect(await clientIpOf(other.json.submission_id)).toBe('127.0.0.3');
  expect(await clientIpOf(spoofed.json.submission_id)).toBe('127.0.0.4');
});

it('restarts the three processes one at a time under a load: every answer normal, every 200 delivered', async () => {
  // 40 clients, each at its own address, each once every 3.5 s: within the rate limit, about 11 a second.
  const clients = Array.from({ length: 40 }, (_, n) => `127.0.1.${n + 1}`);
  const answers: Array<{ from: string; status: number; retryAfter?: string; id?: string; at: number }> = [];
  const failures: string[] = [];
  let loading = true;
  const load = clients.map(async (from, n) => {
    await sleep((n * 3_500) / clients.length);
    while (loading) {
      const started = Date.now();
      try {
        const answer = await submitThrough(from, `under load from ${from}`);
        answers.push({ from, status: answer.status, retryAfter: answer.headers['retry-after'], id: answer.json?.submission_id, at: Date.now() });
      } catch (error) {
        failures.push(`${from}: ${(error as Error).message}`);
      }
      await sleep(Math.max(0, started + 3_500 - Date.now()));
    }
  });

  const restarts: Array<{ from: number; to: number }> = [];
  for (const [index, api] of apis.entries()) {
    const from = Date.now();
    // Drain: the balancer sends it nothing new; once its requests are answered it stops.
    await runtime(`set server api/api${index} state maint`);
    await eventually(async () => ((await serverState(index)).sessions === 0 ? true : undefined), 30_000, `api${index} drained`);
    await api.process!.stop();
    api.process = await spawnApi(apiEnv(api.port));
    await runtime(`set server api/api${index} state ready`);
    await eventually(async () => ((await serverState(index)).status === 'UP' ? true : undefined), 30_000, `api${index} back up`);
    restarts.push({ from, to: Date.now() });
  }
  // However quick the restarts were, the load goes on for a few rounds of every client.
  await eventually(async () => (answers.length > clients.length * 3 ? true : undefined), 60_000, 'three rounds of the load');
  loading = false;
  await Promise.all(load);

  expect(failures).toEqual([]);
  const abnormal = answers.filter(({ status, retryAfter }) => !(status === 200 || ((status === 429 || status === 503) && retryAfter)));
  expect(abnormal).toEqual([]);
  const accepted = answers.filter((answer) => answer.status === 200);
  // The load ran through each of the three restarts: submissions were accepted while each was under way.
  for (const restart of restarts) expect(accepted.filter((answer) => answer.at >= restart.from && answer.at <= restart.to).length).toBeGreaterThan(0);
  expect(accepted.length).toBeGreaterThan(clients.length * 2);
  const ids = accepted.map((answer) => answer.id!);
  await eventually(
    async () => {
      const [row] = await h.sql<{ sent: number }>(`select count(*)::int as sent from submissions where id = any($1) and email_status = 'sent'`, [ids]);
      return row!.sent === ids.length ? true : undefined;
    },
    60_000,
    'every accepted submission emailed',
  );
  const recorded = await h.sql<{ id: string; ip: string }>('select id, client_ip as ip from submissions where id = any($1)', [ids]);
  const sentFrom = new Map(accepted.map((answer) => [answer.id!, answer.from]));
  expect(recorded.filter((row) => row.ip !== sentFrom.get(row.id))).toEqual([]);
}, 240_000);
