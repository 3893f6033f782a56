// Scenario 9, the spam filter (a real rspamd, started here):
//   - delivery with 1 worker and the filter on, against the same worker with it off;
//   - how well it separates spam from ham as owners teach it (recall: spam held; ham held; precision:
//     the spam among all held): a labelled set of short messages
//     (bench/data/sms-spam-collection.tsv) shaped as form submissions, checked before any
//     teaching and after 50, 100 and 200 marks of each kind, on messages never taught. Seen by
//     the owner who taught (their own statistics and everyone's) and by another owner's new key
//     (everyone's only), at the normal and the strict level.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { startRspamd } from '../../src/local/rspamd.ts';
import { createSpamFilter, type SpamFilterSettings } from '../../src/shared/spam-filter.ts';
import { type Ctx } from '../support/context.ts';
import { mailLoop, serviceDrain } from '../support/drains.ts';
import { percentile } from '../support/load.ts';
import { childPids, ROOT, track } from '../support/proc.ts';
import { CHECKS_IN_FLIGHT, formSample, inFixedOrder, scoresFor, SPAM_LEVELS } from '../support/spam-samples.ts';

const TEACH_STAGES = [0, 50, 100, 200];
const HAM_TESTED = 2_000;
const TEACHER = 'teacher@example.test';
const NEWCOMER = 'newcomer@example.test';

type Labelled = { spam: boolean; text: string };

export async function spamFilter(ctx: Ctx): Promise<void> {
  const { S, rows, notes, log } = ctx;
  const rspamd = await startRspamd();
  const untrack = track({ name: 'rspamd', stop: rspamd.stop, pid: rspamd.child.pid });
  const env = { SPAM_FILTER_URL: rspamd.url, SPAM_FILTER_CONTROLLER_URL: rspamd.controllerUrl, SPAM_FILTER_PASSWORD: rspamd.password };
  const rspamdProbe = { label: 'rspamd', pids: () => [rspamd.child.pid!, ...childPids(rspamd.child.pid!)] };
  try {
    // Delivery first, while nothing is taught: the benchmark's messages are all ham.
    const scenario = `9 Spam filter: delivery, 1 worker (${S.backlog.toLocaleString('en-US')} emails)`;
    const off = await serviceDrain(ctx, '9 filter off', 1, S.backlog, { warmup: S.deliveryWarmup });
    const on = await serviceDrain(ctx, '9 filter on', 1, S.backlog, { warmup: S.deliveryWarmup, extraEnv: env, extraProbes: [rspamdProbe] });
    const { rows: verdicts } = await ctx.sql.query<{ verdict: string | null; n: string }>('select spam_verdict as verdict, count(*) as n from submissions group by 1');
    const unchecked = Number(verdicts.find((row) => row.verdict === 'unchecked')?.n ?? 0);
    if (unchecked) notes.push(`spam filter delivery: ${unchecked} of the emails went out unchecked (the check failed or took over SPAM_CHECK_TIMEOUT_MS)`);
    log(`spam filter verdicts: ${verdicts.map((row) => `${row.verdict} ${row.n}`).join(', ')}`);
    log(`spam filter delivery: on ${(on.count / on.seconds).toFixed(0)} vs off ${(off.count / off.seconds).toFixed(0)} emails/s`);
    for (const [side, drain] of [['on', on], ['off', off]] as const) {
      if (!drain.drained) notes.push(`spam filter delivery, filter ${side}: only ${drain.count} of ${S.backlog} emails within ${S.drainCapMs / 1000} s`);
    }
    const baseline = await mailLoop(ctx, '9 baseline loop', 1, S.backlog, { warmup: S.deliveryWarmup });
    rows.push(
      { scenario, metric: 'emails/s, filter on vs off', service: on.count / on.seconds, baseline: off.count / off.seconds, unit: 'emails/s', target: { kind: 'ratio>=', value: 0.8 } },
      { scenario, metric: 'emails/s, filter on vs the loop', service: on.count / on.seconds, baseline: baseline.count / baseline.seconds, unit: 'emails/s' },
      { scenario, metric: 'CPU ms per email (+ pg, redis, rspamd)', service: on.cpuPerEmail, baseline: off.cpuPerEmail, unit: 'ms' },
    );
    await teachingCurve(ctx, { scanUrl: rspamd.url, controllerUrl: rspamd.controllerUrl, password: rspamd.password });
  } finally {
    untrack();
    await rspamd.stop();
  }
}

/** Precision and recall as owners teach, on messages never taught, and the time a check takes. */
async function teachingCurve(ctx: Ctx, settings: SpamFilterSettings): Promise<void> {
  const { rows, log, quick } = ctx;
  const filter = createSpamFilter(settings);
  const all = readCorpus();
  const spam = all.filter((message) => message.spam);
  const ham = all.filter((message) => !message.spam);
  const stages = quick ? [0, 50] : TEACH_STAGES;
  const taughtMost = stages[stages.length - 1]!;
  const teachSpam = spam.slice(0, taughtMost);
  const teachHam = ham.slice(0, taughtMost);
  const testSpam = spam.slice(taughtMost);
  const testHam = ham.slice(taughtMost, taughtMost + (quick ? 500 : HAM_TESTED));
  const scenario = `9 Spam filter: ${testSpam.length} spam + ${testHam.length} ham never taught`;
  const latencies: number[] = [];
  let taught = 0;
  for (const stage of stages) {
    for (; taught < stage; taught += 1) {
      await filter.learn(formSample(teachSpam[taught]!, TEACHER), 'spam', 10_000);
      await filter.learn(formSample(teachHam[taught]!, TEACHER), 'ham', 10_000);
    }
    for (const [who, owner] of [['the teaching owner', TEACHER], ['another owner', NEWCOMER]] as const) {
      const spamScores = await scoresFor(filter, testSpam, owner, latencies);
      const hamScores = await scoresFor(filter, testHam, owner, latencies);
      for (const level of ['normal', 'strict'] as const) {
        const [spamHeld, hamHeld] = [spamScores.filter((score) => score >= SPAM_LEVELS[level]).length, hamScores.filter((score) => score >= SPAM_LEVELS[level]).length];
        const caught = spamHeld / spamScores.length;
        const flagged = hamHeld / hamScores.length;
        // Of what was held, how much was spam (none held: no precision to speak of).
        const precision = spamHeld + hamHeld ? spamHeld / (spamHeld + hamHeld) : Number.NaN;
        log(`spam filter after ${stage}+${stage} marks, ${who}, ${level}: spam caught ${(caught * 100).toFixed(1)} %, ham flagged ${(flagged * 100).toFixed(2)} %, precision ${Number.isFinite(precision) ? `${(precision * 100).toFixed(1)} %` : 'n/a'}`);
        const final = stage === taughtMost && who === 'the teaching owner' && level === 'normal';
        const label = `after ${stage} + ${stage} marks, ${who}, ${level}`;
        rows.push(
          { scenario, metric: `${label}: spam caught`, service: caught * 100, baseline: Number.NaN, unit: '%', ...(final && !quick ? { target: { kind: '>=', value: 90 } as const } : {}) },
          { scenario, metric: `${label}: ham marked spam`, service: flagged * 100, baseline: Number.NaN, unit: '%', ...(final && !quick ? { target: { kind: '<=', value: 1 } as const } : {}) },
          { scenario, metric: `${label}: precision (spam of all held)`, service: precision * 100, baseline: Number.NaN, unit: '%' },
        );
      }
    }
  }
  latencies.sort((a, b) => a - b);
  rows.push(
    { scenario: `9 Spam filter: one check, ${CHECKS_IN_FLIGHT} in flight`, metric: 'time p50', service: percentile(latencies, 0.5), baseline: Number.NaN, unit: 'ms' },
    { scenario: `9 Spam filter: one check, ${CHECKS_IN_FLIGHT} in flight`, metric: 'time p99', service: percentile(latencies, 0.99), baseline: Number.NaN, unit: 'ms', target: { kind: '<=', value: 50 } },
  );
}

/** The corpus, in a fixed shuffled order (the same split on every run). */
function readCorpus(): Labelled[] {
  const lines = readFileSync(path.join(ROOT, 'bench', 'data', 'sms-spam-collection.tsv'), 'utf8').split('\n').filter(Boolean);
  return inFixedOrder(
    lines.map((line) => {
      const [label, ...text] = line.split('\t');
      return { spam: label === 'spam', text: text.join('\t') };
    }),
  );
}
