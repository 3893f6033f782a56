// Scenario 11, the owner console at 100,000 messages on one key (and as many on another key): the
// list's full-text search and filters, through the owner JSON API as the console's pages ask, and
// the overview pages (30 days of messages a day by outcome), one request at a time. The baseline is
// the same list unfiltered.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { BENCH_OWNER } from '../floor/message.ts';
import { resetState, SUBMISSION_TABLES, type Ctx } from '../support/context.ts';
import { percentile } from '../support/load.ts';
import { spawnApi, stopReporting } from '../support/processes.ts';

export const CONSOLE_ROWS = 100_000;

/** Words for the generated messages: a few common, many rare, as in real mail. */
const NAMES = ['ana', 'bruno', 'chen', 'dalia', 'emeka', 'fatima', 'goran', 'hana', 'ivan', 'jules', 'kofi', 'lena', 'mateo', 'nadia', 'omar', 'priya'];
const TOPICS = ['quote', 'invoice', 'delivery', 'refund', 'appointment', 'partnership', 'complaint', 'catalogue', 'warranty', 'booking'];

/** What an owner searches for: a rare name, a common topic, an address's start, with a status or dates. */
const SEARCHES = ['q=zephyrine', 'q=hana+refund', 'q=quote', 'q=visitor4711', 'q=ana&status=failed', 'q=delivery&from=DAY-20&to=DAY-10', 'q=warranty+order'];

export async function consoleQueries(ctx: Ctx): Promise<void> {
  const { rows, log } = ctx;
  const scenario = `11 Owner console: ${CONSOLE_ROWS.toLocaleString('en-US')} messages a key`;
  await resetState(ctx);
  const t0 = Date.now();
  const otherKey = (await ctx.sql.query<{ id: string }>(`select id from verification_keys where id <> $1 limit 1`, [ctx.keyId])).rows[0]!.id;
  for (const keyId of [ctx.keyId, otherKey]) {
    await ctx.sql.query(
      `insert into submissions (id, key_id, email, message, subject, custom_fields, email_status, email_attempts, client_ip, sent_at, created_at)
       select uuidv7(-make_interval(secs => n * 50)), $1,
              'visitor' || n || '.' || ($2::text[])[1 + n % 16] || '@example.test',
              'Hello, this is ' || ($2::text[])[1 + n % 16] || ' about the ' || ($3::text[])[1 + n % 10] || ' for order ' || n ||
                '. Could you tell me more about it? Thanks for the help, kind regards.',
              case when n % 3 = 0 then 'New contact form submission from visitor' || n || '@example.test' else 'About my ' || ($3::text[])[1 + n % 7] end,
              jsonb_build_array(jsonb_build_array('company', case when n % 5000 = 0 then 'Zephyrine Ltd' else 'Company ' || (n % 997) end)),
              case when n % 50 = 0 then 'failed' when n % 20 = 0 then 'spam' when n % 97 = 0 then 'bounced' else 'sent' end,
              1, '127.0.0.1', now() - make_interval(secs => n * 50), now() - make_interval(secs => n * 50)
         from generate_series(1, $4::int) as n`,
      [keyId, NAMES, TOPICS, CONSOLE_ROWS],
    );
  }
  await ctx.sql.query('vacuum analyze submissions');
  await ctx.sql.query('checkpoint');
  log(`inserted ${2 * CONSOLE_ROWS} rows in ${((Date.now() - t0) / 1000).toFixed(1)} s`);

  // A signed-in owner: a session row, as the sign-in link would make it.
  const cookie = randomBytes(32).toString('base64url');
  await ctx.sql.query(`insert into owner_sessions (id, token_hash, email, expires_at) values ($1, $2, $3, now() + interval '1 day')`, [
    randomUUID(),
    createHash('sha256').update(cookie).digest('hex'),
    BENCH_OWNER,
  ]);
  const api = await spawnApi(ctx);
  const day = (offset: number) => new Date(Date.now() - offset * 86_400_000).toISOString().slice(0, 10);
  const get = async (path: string) => {
    const started = performance.now();
    const response = await fetch(`${api.url}${path}`, { headers: { cookie: `owner_session=${cookie}` } });
    await response.arrayBuffer();
    if (!response.ok) throw new Error(`${path}: ${response.status}`);
    return performance.now() - started;
  };
  const timed = (query: string) => get(`/owner/api/keys/${ctx.keyId}/submissions?${query.replace(/DAY-(\d+)/g, (_, n: string) => day(Number(n)))}`);
  // The overview pages, whole: the key's, and all keys' (the bench owner holds one key).
  const overviews = [`/owner/keys/${ctx.keyId}/overview`, '/owner/overview'];
  const rounds = ctx.quick ? 10 : 40;
  const searches: number[] = [];
  const plain: number[] = [];
  const overview: number[] = [];
  try {
    for (const query of SEARCHES) await timed(query); // warm the plans and the cache
    for (const path of overviews) await get(path);
    for (let round = 0; round < rounds; round++) {
      for (const query of SEARCHES) searches.push(await timed(query));
      plain.push(await timed(''));
      for (const path of overviews) overview.push(await get(path));
    }
  } finally {
    await stopReporting(ctx, api.child, scenario);
  }
  for (const list of [searches, plain, overview]) list.sort((a, b) => a - b);
  rows.push(
    {
      scenario,
      metric: 'search p95',
      service: percentile(searches, 0.95),
      baseline: percentile(plain, 0.95),
      unit: 'ms',
      target: { kind: '<=', value: 100 },
      note: `${searches.length} searches (${SEARCHES.length} kinds) against the unfiltered list, 25 a page`,
    },
    {
      scenario,
      metric: 'overview p95',
      service: percentile(overview, 0.95),
      baseline: percentile(plain, 0.95),
      unit: 'ms',
      target: { kind: '<=', value: 100 },
      note: `${overview.length} overview pages (a key's, all keys') against the unfiltered list`,
    },
  );
  await ctx.sql.query(`truncate ${SUBMISSION_TABLES}`);
}
