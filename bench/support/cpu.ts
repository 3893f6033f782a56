// CPU accounting: the CPU time each process (under test, the shared services, the benchmark itself)
// used in a measured window, per request or per email, for the lines below the table.
import type { Ctx } from './context.ts';
import { childPids, cpuMs, type Child } from './proc.ts';

/** `reapedBy`: a parent whose own CPU time and that of its exited children count too (see cpuMs). */
export type CpuProbe = { label: string; pids: () => number[]; reapedBy?: () => number };

/** The processes under test first, then the shared services and the benchmark process itself. */
export function cpuProbes(ctx: Ctx, own: CpuProbe[]): CpuProbe[] {
  return [
    ...own,
    // The postmaster with its exited children: backends and autovacuum workers come and go, and one
    // that exited within a window took its CPU time out of a sum over the live children only.
    { label: 'postgres', pids: () => childPids(ctx.postgresPid()), reapedBy: () => ctx.postgresPid() },
    { label: 'redis', pids: () => [ctx.redisPid] },
    { label: 's3', pids: () => [ctx.s3Pid] },
    { label: 'sink', pids: () => [ctx.sink.child.pid] },
    { label: 'bench', pids: () => [process.pid] },
  ];
}

export const probe = (label: string, children: Child[]): CpuProbe => ({ label, pids: () => children.map((child) => child.pid) });

export function cpuSnapshot(probes: CpuProbe[]): Map<string, number> {
  return new Map(
    probes.map((probe) => {
      const parent = probe.reapedBy?.();
      return [probe.label, probe.pids().reduce((sum, pid) => sum + cpuMs(pid), parent === undefined ? 0 : cpuMs(parent, { exitedChildren: true }))];
    }),
  );
}

/** Transactions committed in PostgreSQL (each autocommit statement is one) and Redis commands run. */
export async function roundTrips(ctx: Ctx): Promise<{ pg: number; redis: number }> {
  const { rows: stat } = await ctx.sql.query<{ n: string }>(`select xact_commit + xact_rollback as n from pg_stat_database where datname = current_database()`);
  const info = await ctx.redis.info('stats');
  return { pg: Number(stat[0]?.n ?? 0), redis: Number(/total_commands_processed:(\d+)/.exec(info)?.[1] ?? 0) };
}

/** Records a CPU line for the table below the results; returns the CPU ms per unit by process label. */
export function recordCpu(
  ctx: Ctx,
  title: string,
  before: Map<string, number>,
  after: Map<string, number>,
  units: number,
  busy: number,
  trips?: { before: { pg: number; redis: number }; after: { pg: number; redis: number } },
): Map<string, number> {
  const perUnitByLabel = new Map([...after].map(([label, ms]) => [label, (ms - (before.get(label) ?? 0)) / Math.max(1, units)] as const));
  const parts = [...perUnitByLabel].filter(([, perUnit]) => perUnit >= 0.005).map(([label, perUnit]) => `${label} ${perUnit.toFixed(2)}`);
  const perUnit = (value: number) => (value / Math.max(1, units)).toFixed(1);
  const tripText = trips ? `; pg xacts ${perUnit(trips.after.pg - trips.before.pg)}, redis cmds ${perUnit(trips.after.redis - trips.before.redis)}` : '';
  ctx.cpuTable.push(`${title.padEnd(42)} ${parts.join(', ')}  (all cores ${(busy * 100).toFixed(0)}% busy${tripText})`);
  return perUnitByLabel;
}
