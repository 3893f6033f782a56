// Scenario 16, file scanning: delivery of submissions that each carry one 100 KB file, by 1 worker
// with scanning on (a local clamd, src/local/clamd.ts, started here with the tests' own signatures)
// against the same worker with scanning off. The sides run off, on, on, off, so that a drift of the
// machine weighs on both; each side's figure is the mean of its two. The CPU per email counts
// clamd's beside the worker's, PostgreSQL's and Redis's. With a few signatures, not the official
// database, this is the cost of the stream (the worker reading the file from S3 once more, clamd
// writing it to its temporary file and reading it), not of matching it against a million signatures.
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startClamd } from '../../src/local/clamd.ts';
import { writeTestSignatures } from '../../test/support/clamd-signatures.ts';
import { BUCKET, type Ctx } from '../support/context.ts';
import type { CpuProbe } from '../support/cpu.ts';
import { serviceDrain, type Drain } from '../support/drains.ts';
import { track } from '../support/proc.ts';

const FILE_BYTES = 100 * 1024;

export async function fileScan(ctx: Ctx): Promise<void> {
  const { S, rows, notes, log } = ctx;
  const count = ctx.quick ? 200 : 1_000;
  const warmup = ctx.quick ? 50 : 200;
  const scenario = `16 File scanning: delivery, 1 worker (${count.toLocaleString('en-US')} emails, one 100 KB file each)`;
  const dir = await mkdtemp(path.join(os.tmpdir(), 'cfs-bench-clamd-'));
  const untrackDir = track({ name: 'clamd dir', stop: () => rm(dir, { recursive: true, force: true }) });
  await writeTestSignatures(path.join(dir, 'db'));
  const clamd = await startClamd({ databaseDir: path.join(dir, 'db'), dir: path.join(dir, 'run') });
  const untrack = track({ name: 'clamd', stop: clamd.stop, pid: clamd.child.pid });
  const clamdProbe: CpuProbe = { label: 'clamd', pids: () => [clamd.child.pid!] };
  try {
    const key = 'bench/scan-100kb.bin';
    // Random bytes: a file clamd cannot tell the type of, read to its end.
    await ctx.s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: randomBytes(FILE_BYTES), ContentLength: FILE_BYTES }));
    const sides = { off: [] as Drain[], on: [] as Drain[] };
    for (const side of ['off', 'on', 'on', 'off'] as const) {
      const drain = await serviceDrain(ctx, `16 scanning ${side}`, 1, count, {
        warmup,
        attachment: { key, size: FILE_BYTES },
        extraProbes: [clamdProbe],
        ...(side === 'on' ? { extraEnv: { CLAMD_SOCKET: clamd.socket } } : {}),
      });
      if (!drain.drained) notes.push(`file scanning ${side}: only ${drain.count} of ${count} emails within ${S.drainCapMs / 1000} s`);
      // Each file of the side with scanning on was scanned, and found clean: the figures are the scan's.
      const { rows: outcomes } = await ctx.sql.query<{ outcome: string | null; n: string }>(
        'select scan_outcome as outcome, count(*) as n from attachments group by 1',
      );
      const clean = Number(outcomes.find((row) => row.outcome === 'clean')?.n ?? 0);
      if (side === 'on' && clean < drain.count)
        notes.push(`file scanning on: ${clean} files scanned clean for ${drain.count} emails (${outcomes.map((row) => `${row.outcome} ${row.n}`).join(', ')})`);
      log(`file scanning ${side}: ${(drain.count / drain.seconds).toFixed(0)} emails/s, ${drain.cpuPerEmail.toFixed(2)} ms CPU per email`);
      sides[side].push(drain);
    }
    const mean = (drains: Drain[], figure: (drain: Drain) => number) => drains.reduce((sum, drain) => sum + figure(drain), 0) / drains.length;
    rows.push(
      {
        scenario,
        metric: 'emails/s, scanning on vs off',
        service: mean(sides.on, (drain) => drain.count / drain.seconds),
        baseline: mean(sides.off, (drain) => drain.count / drain.seconds),
        unit: 'emails/s',
      },
      {
        scenario,
        metric: 'CPU ms per email (+ pg, redis, clamd)',
        service: mean(sides.on, (drain) => drain.cpuPerEmail),
        baseline: mean(sides.off, (drain) => drain.cpuPerEmail),
        unit: 'ms',
      },
    );
  } finally {
    untrack();
    await clamd.stop();
    untrackDir();
    await rm(dir, { recursive: true, force: true });
  }
}
