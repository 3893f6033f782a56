// `npm run bench:altcha`: how long headless Chromium takes to solve this service's ALTCHA challenges,
// for choosing ALTCHA_MAX_COUNTER (docs/spam.md). The page loads the widget script the service
// serves and solves challenges made as the service makes them, one after another.
//   npm run bench:altcha                         the default difficulty, 30 solves
//   npm run bench:altcha -- --max=200,400,800    several difficulties
//   npm run bench:altcha -- --runs=50
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus } from 'node:os';
import { solveChallenge } from 'altcha-lib';
import { deriveKey } from 'altcha-lib/algorithms/pbkdf2';
import { chromium } from 'playwright-core';
import { ALTCHA_COST, createAltcha } from '../src/api/submissions/altcha.ts';
import { loadConfigSubset } from '../src/shared/infra/config.ts';
import { chromiumTool, requireSystemTool } from '../src/local/system-tools.ts';
import type { RedisClient } from '../src/shared/infra/queues/redis.ts';

const args = process.argv.slice(2);
const option = (name: string) => args.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3);
const defaultMax = loadConfigSubset(['ALTCHA_MAX_COUNTER'], {}).ALTCHA_MAX_COUNTER;
const maxCounters = option('max')?.split(',').map(Number) ?? [defaultMax];
const runs = Number(option('runs') ?? 30);

// Found, or installed as the test suite installs it (apt-get, as root on Debian or Ubuntu), before anything starts.
const chromiumPath = requireSystemTool(chromiumTool('npm run bench:altcha'));
const script = readFileSync(new URL('./altcha.min.js', import.meta.resolve('altcha')));
let maxCounter = maxCounters[0]!;
// Challenges only: nothing is verified here, so no Redis.
const altchaFor = (max: number) =>
  createAltcha({ secret: 'bench-secret-bench-secret-bench-secret', maxCounter: max, redis: undefined as unknown as RedisClient, prefix: 'bench' });
let altcha = altchaFor(maxCounter);

// In the page: a fresh widget, minDuration 0 so the figure is the work alone, not the widget's pause;
// seconds from asking it to verify to its field being filled in.
const SOLVE_ONCE = `(async () => {
  document.querySelector('form').innerHTML = '<altcha-widget challenge="/challenge"></altcha-widget>';
  const widget = document.querySelector('altcha-widget');
  await new Promise((resolve) => setTimeout(resolve, 0));
  widget.configure({ minDuration: 0 });
  const start = performance.now();
  await widget.verify();
  if (!document.querySelector('input[name="altcha"]')?.value) throw new Error('the widget did not fill in its field');
  return (performance.now() - start) / 1000;
})()`;

const PAGE = `<!doctype html><html><body><form><altcha-widget challenge="/challenge"></altcha-widget></form><script src="/altcha.min.js"></script></body></html>`;
const server = createServer((req, res) => {
  if (req.url === '/altcha.min.js') return res.writeHead(200, { 'content-type': 'application/javascript' }).end(script);
  if (req.url === '/challenge') {
    void altcha.challenge('bench-key').then((challenge) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(challenge)));
    return;
  }
  res.writeHead(200, { 'content-type': 'text/html' }).end(PAGE);
});
server.listen(0, '127.0.0.1');
await once(server, 'listening');
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;

const browser = await chromium.launch({
  executablePath: chromiumPath,
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
});
try {
  const page = await browser.newPage();
  await page.goto(url);
  await page.waitForFunction("customElements.get('altcha-widget') !== undefined");
  const workers = await page.evaluate<number>('navigator.hardwareConcurrency');
  console.log(
    `Chromium ${browser.version()}, ${cpus().length} CPUs (${cpus()[0]?.model.trim()}), widget workers: ${workers}; PBKDF2/SHA-256, ${ALTCHA_COST} iterations a try`,
  );
  console.log('max counter | solves | median s | p90 s | max s | CPU-s per 1,000 solves');
  for (const max of maxCounters) {
    maxCounter = max;
    altcha = altchaFor(maxCounter);
    const times: number[] = [];
    for (let i = 0; i < runs; i++) {
      times.push(await page.evaluate<number>(SOLVE_ONCE));
    }
    times.sort((a, b) => a - b);
    const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))]!;
    // Every worker computes until one finds the answer: the CPU spent is the wall time times the workers.
    const cpuPerThousand = (times.reduce((sum, t) => sum + t, 0) / times.length) * workers * 1000;
    console.log(`${max} | ${runs} | ${at(0.5).toFixed(2)} | ${at(0.9).toFixed(2)} | ${at(1 - 1e-9).toFixed(2)} | ${Math.round(cpuPerThousand)}`);
  }
  // A bot needs no browser: altcha-lib's own solver on Node's native PBKDF2, one thread.
  console.log('Node solver, one thread: max counter | solves | mean CPU-s a solve | CPU-s per 1,000 solves');
  for (const max of maxCounters) {
    const solver = altchaFor(max);
    let cpu = 0;
    for (let i = 0; i < runs; i++) {
      const challenge = await solver.challenge('bench-key');
      const before = process.cpuUsage();
      const solution = await solveChallenge({ challenge, deriveKey });
      if (!solution) throw new Error('no solution');
      const used = process.cpuUsage(before);
      cpu += (used.user + used.system) / 1e6;
    }
    console.log(`${max} | ${runs} | ${(cpu / runs).toFixed(3)} | ${Math.round((cpu / runs) * 1000)}`);
  }
} finally {
  await browser.close();
  server.close();
}
