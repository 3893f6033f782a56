// The result table: every figure beside its baseline from the same run, their ratio, the target
// and whether it was met.

export type Row = {
  scenario: string;
  metric: string;
  service: number;
  baseline: number;
  /** How to format the two figures. */
  unit: 'req/s' | 'ms' | 'emails/s' | 'MB' | '%' | 'x' | 'rows' | 'emails';
  /** The target on the ratio service/baseline (`ratio>=` or `ratio<=`), on the service figure alone (`<=`), or none. */
  target?: { kind: 'ratio>=' | 'ratio<=' | '<='; value: number };
  note?: string;
};

export function ratio(row: Row): number {
  return row.baseline > 0 ? row.service / row.baseline : Number.NaN;
}

export function met(row: Row): boolean | undefined {
  if (!row.target) return undefined;
  if (!Number.isFinite(row.service)) return false;
  const value = row.target.kind === '<=' ? row.service : ratio(row);
  if (!Number.isFinite(value)) return false;
  return row.target.kind === 'ratio>=' ? value >= row.target.value : value <= row.target.value;
}

const figure = (value: number, unit: Row['unit']) => {
  if (!Number.isFinite(value)) return 'n/a';
  const digits = unit === 'ms' && value < 10 ? (value < 3 ? 2 : 1) : unit === 'x' || (unit === '%' && value < 1) ? 2 : 0;
  const text = value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
  return `${text} ${unit}`;
};

const targetText = (row: Row) => {
  if (!row.target) return '—';
  const { kind, value } = row.target;
  if (kind === '<=') return `≤ ${figure(value, row.unit)}`;
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
