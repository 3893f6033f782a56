// The result table (every figure beside its baseline from the same run, their ratio, the target
// and whether it was met) and the report printed with it at the end of a run.
import os from 'node:os';
import { startScriptFlags } from '../../src/local/deployed-flags.ts';
import { CLIENTS, WORKER_CONCURRENCY, type Run } from './context.ts';
import { clientAddress } from './load.ts';

export type Row = {
  scenario: string;
  metric: string;
  service: number;
  baseline: number;
  /** How to format the two figures. */
  unit:
    | 'req/s'
    | 'ms'
    | 's'
    | 'µs'
    | 'emails/s'
    | 'DSNs/s'
    | 'MB'
    | '%'
    | 'x'
    | 'rows'
    | 'emails'
    | 'posts'
    | 'submissions/s'
    | 'submissions'
    | 'requests'
    | 'deliveries';
  /** The target on the ratio service/baseline (`ratio>=` or `ratio<=`), on the service figure alone (`<=`, `>=`), or none. */
  target?: { kind: 'ratio>=' | 'ratio<=' | '<=' | '>='; value: number };
  note?: string;
};

export function ratio(row: Row): number {
  return row.baseline > 0 ? row.service / row.baseline : Number.NaN;
}

export function met(row: Row): boolean | undefined {
  if (!row.target) return undefined;
  if (!Number.isFinite(row.service)) return false;
  const { kind, value: wanted } = row.target;
  const value = kind === '<=' || kind === '>=' ? row.service : ratio(row);
  if (!Number.isFinite(value)) return false;
  return kind === 'ratio>=' || kind === '>=' ? value >= wanted : value <= wanted;
}

const figure = (value: number, unit: Row['unit']) => {
  if (!Number.isFinite(value)) return 'n/a';
  const digits = unit === 's' ? 2 : unit === 'ms' && value < 10 ? (value < 3 ? 2 : 1) : unit === 'x' || (unit === '%' && value < 1) ? 2 : 0;
  const text = value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
  return `${text} ${unit}`;
};

const targetText = (row: Row) => {
  if (!row.target) return '—';
  const { kind, value } = row.target;
  if (kind === '<=') return `≤ ${figure(value, row.unit)}`;
  if (kind === '>=') return `≥ ${figure(value, row.unit)}`;
  return `ratio ${kind === 'ratio>=' ? '≥' : '≤'} ${value.toFixed(2)}`;
};

export function renderTable(rows: Row[]): string {
  const header = ['scenario', 'metric', 'service', 'baseline', 'ratio', 'target', 'ok'];
  const body = rows.map((row) => {
    const ok = met(row);
    return [
      row.scenario,
      row.metric,
      figure(row.service, row.unit),
      figure(row.baseline, row.unit),
      Number.isFinite(ratio(row)) ? ratio(row).toFixed(2) : 'n/a',
      targetText(row),
      ok === undefined ? '' : ok ? 'yes' : 'NO',
    ];
  });
  const widths = header.map((title, column) => Math.max(title.length, ...body.map((cells) => cells[column]!.length)));
  const line = (cells: string[]) => `| ${cells.map((cell, column) => cell.padEnd(widths[column]!)).join(' | ')} |`;
  return [line(header), `|${widths.map((width) => '-'.repeat(width + 2)).join('|')}|`, ...body.map(line)].join('\n');
}

let printed = false;
/** Prints the report once: the settings, the table, the targets missed, the CPU lines and the notes. */
export function printReport(run: Run, machine: string, partial = false): void {
  if (printed) return;
  printed = true;
  const { S, rows, notes, cpuTable, nodeFlags, quick, started } = run;
  const out: string[] = [];
  out.push(
    '',
    machine,
    `Settings: ${CLIENTS} keep-alive clients from ${clientAddress(0)}…${clientAddress(CLIENTS - 1)}, ` +
      `intake ${S.repeats}×(${S.warmupMs / 1000} s warm-up + ${S.measureMs / 1000} s measured) per side, rate limit on (RATE_LIMIT_MAX=1000000), ` +
      `delivery ${S.deliveryWarmup.toLocaleString('en-US')} emails of warm-up + ${S.backlog.toLocaleString('en-US')} measured per side` +
      `${S.deliveryRepeats > 1 ? ` (${S.deliveryRepeats} repeats with 2 and more workers, medians)` : ''}, ` +
      `WORKER_CONCURRENCY=${WORKER_CONCURRENCY}, SMTP sink answers after ${run.sinkDelayMs} ms` +
      (startScriptFlags('start:api').length ? `, API flags (start:api) ${startScriptFlags('start:api').join(' ')}` : '') +
      (startScriptFlags('start:worker').length ? `, worker flags (start:worker) ${startScriptFlags('start:worker').join(' ')}` : '') +
      `${nodeFlags.length ? `, node flags ${nodeFlags.join(' ')}` : ''}${quick ? ', --quick' : ''}${partial ? ' — PARTIAL (deadline)' : ''}`,
    '',
  );
  out.push(renderTable(rows), '');
  const missed = rows.filter((row) => met(row) === false);
  out.push(missed.length ? `Targets missed: ${missed.map((row) => `${row.scenario} / ${row.metric}`).join('; ')}` : 'All targets met.');
  if (cpuTable.length)
    out.push('', 'CPU ms per request (intake) or per email (delivery), by process, in the measured windows:', ...cpuTable.map((line) => `  ${line}`));
  if (notes.length) out.push('', 'Notes:', ...notes.map((note) => `  - ${note}`));
  out.push('', `Total time ${((Date.now() - started) / 1000).toFixed(0)} s; load average ${os.loadavg()[0]!.toFixed(2)} at the end.`);
  process.stdout.write(`${out.join('\n')}\n`);
}
