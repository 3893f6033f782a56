// Scenario 6, growth: JSON intake with a big submissions table against the same API on an empty
// one, so that an index or query that degrades with the table's size shows.
import { BENCH_MESSAGE } from '../floor/message.ts';
import { resetState, SUBMISSION_TABLES, type Ctx } from '../support/context.ts';
import { combine, jsonBody, loadPhase, prime } from '../support/load-phase.ts';
import type { RequestSpec } from '../support/load.ts';
import { spawnApi, stopReporting } from '../support/processes.ts';

export async function growth(ctx: Ctx): Promise<void> {
  const { S, rows, log } = ctx;
  const scenario = `6 Growth: ${(S.growthRows / 1e6).toLocaleString('en-US')}M rows vs empty`;
  await resetState(ctx);
  const api = await spawnApi(ctx);
  const request: RequestSpec = { path: '/api/contact-api/', contentType: 'application/json', body: jsonBody(ctx.accessKey) };
  const empty = [];
  const full = [];
  try {
    await prime(ctx, api.url, request);
    await resetState(ctx);
    empty.push(await loadPhase(ctx, '6 empty table #1', api.child, api.url, request));
    const t0 = Date.now();
    await ctx.sql.query(
      `insert into submissions (id, key_id, email, message, subject, custom_fields, email_status, email_attempts, client_ip, sent_at, created_at)
       select uuidv7(-make_interval(secs => n)), $1, 'visitor' || n || '@example.test', $2, 'Hello ' || n, $3, 'sent', 1, '127.0.0.1',
              now() - make_interval(secs => n), now() - make_interval(secs => n)
         from generate_series(1, $4::int) as n`,
      [ctx.keyId, BENCH_MESSAGE, JSON.stringify([['name', 'Ada Lovelace']]), S.growthRows],
    );
    await ctx.sql.query('vacuum analyze submissions');
    // The bulk load's own write-back (WAL and dirty pages: docs/benchmarks.md#scenarios-and-targets)
    // is not what a service with a big table sees: flush it before measuring, not during.
    await ctx.sql.query('checkpoint');
    log(`inserted ${S.growthRows} rows in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    // Two windows, as on the empty table: a single window's p99 moves too much between runs to be
    // held within the target (docs/benchmarks.md#running-it).
    full.push(await loadPhase(ctx, `6 ${S.growthRows} rows #1`, api.child, api.url, request));
    full.push(await loadPhase(ctx, `6 ${S.growthRows} rows #2`, api.child, api.url, request));
    await ctx.sql.query(`truncate ${SUBMISSION_TABLES}`);
    empty.push(await loadPhase(ctx, '6 empty table #2', api.child, api.url, request));
  } finally {
    await stopReporting(ctx, api.child, scenario);
  }
  const emptySummary = combine(empty);
  const fullSummary = combine(full);
  rows.push(
    { scenario, metric: 'throughput', service: fullSummary.rps, baseline: emptySummary.rps, unit: 'req/s', target: { kind: 'ratio>=', value: 0.9 } },
    { scenario, metric: 'latency p99', service: fullSummary.p99, baseline: emptySummary.p99, unit: 'ms', target: { kind: 'ratio<=', value: 1.1 } },
  );
}
